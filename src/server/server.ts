import { setMaxListeners } from "node:events";
import { Code, ConnectError, createConnectRouter, createContextValues } from "@connectrpc/connect";
import {
  compressionBrotli,
  compressionGzip,
  universalRequestFromNodeRequest,
  universalResponseToNodeResponse,
} from "@connectrpc/connect-node";
import type { UniversalHandler } from "@connectrpc/connect/protocol";
import type { Config } from "../config.js";
import { notFound } from "../errors.js";
import type { Logger } from "../logger.js";
import { createMcpHandler } from "../mcp/http-transport.js";
import { authenticate } from "./authenticate.js";
import { pathAgentNameKey, protocolKey, type Protocol } from "./context.js";
import { restServices } from "./descriptors.js";
import { observeCalls } from "./interceptors.js";
import { listen, type HttpRequest, type HttpResponse, type Listener } from "./listener.js";
import { Metrics } from "./metrics.js";
import { serveOperatorEvents } from "./operator-events.js";
import { buildOpenApi } from "./rest/openapi.js";
import { createRestTranscoder } from "./rest/transcoder.js";
import { routes, type Services } from "./routes.js";
import { writeJson, writeStatusError } from "./rest/http-response.js";
import { toConnectError } from "./status.js";
import { createTransferRoutes } from "./transfer-routes.js";
import { refuseUndecodable } from "./undecodable.js";
import { serveWebConsole } from "./web-console.js";

export interface AxonServerOptions extends Services {
  config: Config;
  logger: Logger;
}

export interface AxonServer {
  /** Every port it listens on; the first is AGENT_HTTP_PORT. */
  readonly ports: number[];
  readonly metrics: Metrics;
  /** Stops accepting, drains within the grace period, then cancels what still runs. */
  close(): Promise<void>;
}

// neuro-san's own gRPC clients put the agent in the service name: `/<agent>.AgentService/<Method>`.
const legacyAgentPath = /^\/([A-Za-z0-9_-]+)\.AgentService\/([A-Za-z]+)$/;
const agentServicePrefix = "/dev.cognizant_ai.neuro_san.api.grpc.agent.AgentService/";

/** Wires the router, the REST transcoder and the plain HTTP routes into one handler, and listens. */
export async function startServer(options: AxonServerOptions): Promise<AxonServer> {
  const { config, logger, health } = options;
  const metrics = new Metrics();
  const shutdown = new AbortController();
  // Every call links its own signal to this one: far more than the default 10 listeners.
  setMaxListeners(0, shutdown.signal);
  const router = createConnectRouter({
    interceptors: [
      observeCalls({ logger, metrics, forwardedMetadata: config.forwardedRequestMetadata }),
      authenticate(options.operations.principals),
    ],
    acceptCompression: [compressionGzip, compressionBrotli],
    readMaxBytes: config.maxRequestBytes,
    shutdownSignal: shutdown.signal,
  });
  routes(options)(router);
  const rpcHandlers = new Map<string, UniversalHandler>(router.handlers.map((handler) => [handler.requestPath, handler]));
  const mcp = createMcpHandler({
    broker: options.operations.broker,
    clients: options.operations.principals.clients,
    operationsFor: options.operations.descriptor.operationsFor,
    registry: options.registry,
    chats: options.chats,
    logger,
    shutdownSignal: shutdown.signal,
    maxRequestBytes: config.maxRequestBytes,
  });
  const rest = createRestTranscoder({ handlers: router.handlers, services: restServices, maxRequestBytes: config.maxRequestBytes });
  const webConsole = serveWebConsole();
  const transferRoutes = createTransferRoutes({ transfers: options.operations.transfers, clients: options.operations.principals.clients, logger });
  let openApi: string | undefined;

  const plainRoutes: Record<string, (res: HttpResponse, req: HttpRequest) => void | Promise<void>> = {
    "/healthz": (res) => writeJson(res, 200, { status: "ok" }),
    "/livez": (res) => writeJson(res, 200, { status: "ok" }),
    "/readyz": (res) => writeJson(res, health.ready ? 200 : 503, { status: health.ready ? "ready" : "not ready" }),
    "/metrics": async (res) => {
      const body = await metrics.registry.metrics();
      res.writeHead(200, { "content-type": metrics.registry.contentType });
      res.end(body);
    },
    "/api/operator/v1/events": (res, req) => serveOperatorEvents(req, res, options.operations.broker, options.operations.principals.operators),
    "/api/v1/docs": (res) => {
      openApi ??= JSON.stringify(buildOpenApi(restServices, { title: "Axon", version: "1" }));
      res.writeHead(200, { "content-type": "application/json" });
      res.end(openApi);
    },
  };

  async function handle(req: HttpRequest, res: HttpResponse): Promise<void> {
    const path = (req.url ?? "/").split("?", 1)[0] ?? "/";
    if (config.allowCorsHeaders !== undefined) {
      res.setHeader("access-control-allow-origin", "*");
      res.setHeader("access-control-allow-methods", "GET, POST, OPTIONS");
      res.setHeader("access-control-allow-headers", config.allowCorsHeaders);
      if (req.method === "OPTIONS") return void res.writeHead(204).end();
    }
    if (await mcp.handle(req, res)) return;
    if (await transferRoutes.handle(req, res)) return;
    const plain = req.method === "GET" ? plainRoutes[path] : undefined;
    if (plain) return plain(res, req);

    const values = createContextValues();
    const legacy = legacyAgentPath.exec(path);
    const rpc = legacy ? rpcHandlers.get(agentServicePrefix + legacy[2]) : rpcHandlers.get(path);
    if (rpc) {
      values.set(protocolKey, protocolOf(req.headers["content-type"]));
      if (legacy) values.set(pathAgentNameKey, legacy[1] ?? "");
      const response = await rpc(universalRequestFromNodeRequest(req, res, undefined, values));
      return universalResponseToNodeResponse(await refuseUndecodable(response), res);
    }
    if (await webConsole.handle(req, res)) return;
    if (await rest.handle(req, res, values)) return;
    writeStatusError(res, toConnectError(notFound("ROUTE_NOT_FOUND", "no route for this path", { path })));
  }

  const handler = (req: HttpRequest, res: HttpResponse): void => {
    handle(req, res).catch((error: unknown) => {
      // Handlers answer every failure themselves; what gets here is a broken connection or a bug.
      logger.warn({ err: error, path: req.url }, "response failed");
      if (res.headersSent) res.destroy();
      else writeStatusError(res, toConnectError(error));
    });
  };

  const listenOn = [config.httpPort, config.grpcPort].filter((port, index) => index === 0 || port > 0);
  const listeners: Listener[] = [];
  for (const port of listenOn) listeners.push(await listen(handler, { port, host: config.host }));

  return {
    ports: listeners.map((listener) => listener.port),
    metrics,
    async close() {
      health.markDraining();
      const graceMs = config.shutdownGraceSeconds * 1000;
      const cancelStreams = () => shutdown.abort(new ConnectError("server shutting down", Code.Unavailable));
      await Promise.all(listeners.map((listener) => listener.close(graceMs, cancelStreams)));
    },
  };
}

function protocolOf(contentType: string | undefined): Protocol {
  if (contentType?.startsWith("application/grpc-web")) return "grpc-web";
  if (contentType?.startsWith("application/grpc")) return "grpc";
  return "connect";
}

