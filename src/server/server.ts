import { setMaxListeners } from "node:events";
import type { DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, createConnectRouter } from "@connectrpc/connect";
import { compressionBrotli, compressionGzip, universalResponseToNodeResponse } from "@connectrpc/connect-node";
import type { UniversalHandler, UniversalServerResponse } from "@connectrpc/connect/protocol";
import type { Config } from "../config.js";
import { AxonError, notFound } from "../errors.js";
import { AgentService } from "../gen/neuro_san/api/grpc/agent_pb.js";
import { ConciergeService } from "../gen/neuro_san/api/grpc/concierge_pb.js";
import type { Logger } from "../logger.js";
import type { McpHandler } from "../mcp/http-transport.js";
import type { JwtVerifier } from "../auth/jwt.js";
import { Authenticator, serviceAuthenticator } from "./authenticate.js";
import { checkedEnvelopes, isEnveloped } from "./connect/checked-envelopes.js";
import { connectNodeRequest } from "./connect/node-request.js";
import { connectUnaryRoute } from "./connect/unary-call.js";
import { pathAgentNameKey, protocolKey, socketKey, type Protocol } from "./context.js";
import { boundTimeoutHeaders } from "./deadlines.js";
import { restServices } from "./descriptors.js";
import { headerIn, leavesUnreadBody } from "./http-request.js";
import { grpcUnaryRoute } from "./grpc/unary-call.js";
import { binaryContentType, decodedTextBody, isGrpcWebText, textResponse } from "./grpc-web-text.js";
import { IntakeBudget } from "./intake-budget.js";
import { TlsCredentials } from "./tls-credentials.js";
import { listen, type HttpRequest, type HttpResponse, type Listener } from "./listener.js";
import { onLlmCall } from "../telemetry/llm-calls.js";
import { Metrics } from "./metrics.js";
import { serveOperatorEvents } from "./operator-events.js";
import { CallPipeline, CallValues } from "./pipeline/call-pipeline.js";
import { connectPipeline } from "./pipeline/connect-adapter.js";
import { buildOpenApi } from "./rest/openapi.js";
import { createRestTranscoder } from "./rest/transcoder.js";
import { serviceImplementations, type Services } from "./routes.js";
import { writeJson, writeStatusError } from "./rest/http-response.js";
import { rpcFramingOf, unknownRpc, unsupportedEncoding, unsupportedEncodingError, writeRefusal } from "./refused-call.js";
import { requestPath, RpcMethods, type ResolvedMethod } from "./rpc-methods.js";
import { toConnectError } from "./status.js";
import { createTransferRoutes } from "./transfer-routes.js";
import { createInferenceRoutes } from "../inference/inference-routes.js";
import type { NativeCall } from "../operations/native-calls.js";
import { isStrictService } from "./strict/contract.js";
import { refuseUndecodable } from "./undecodable.js";
import { serveWebConsole } from "./web-console.js";

export interface AxonServerOptions extends Services {
  config: Config;
  logger: Logger;
  /** Bearer JWTs from an identity provider, when AXON_JWT_ISSUER is set. */
  tokens?: JwtVerifier | undefined;
}

export interface AxonServer {
  /** Every port it listens on; the first is AGENT_HTTP_PORT. */
  readonly ports: number[];
  readonly metrics: Metrics;
  /** Stops accepting, drains within the grace period, then cancels what still runs. */
  close(): Promise<void>;
}

/** The MCP endpoint's path; its SDK loads on the first request there, not at start-up. */
const mcpPath = "/mcp";

const neuroSanServices: readonly DescService[] = [AgentService, ConciergeService];

/**
 * Wires every route into one listener. RPCs meet one call pipeline whatever carries them: unary gRPC is framed on the
 * HTTP/2 stream, unary Connect and REST are read from the request, and the rest (Connect streams, gRPC-Web, gRPC
 * streams) goes through connect-node; each calls the same service implementations.
 */
export async function startServer(options: AxonServerOptions): Promise<AxonServer> {
  const { config, logger, health } = options;
  const metrics = new Metrics();
  const stopCountingLlmCalls = onLlmCall((record) => metrics.llmCall(record));
  const shutdown = new AbortController();
  // Every call that watches shutdown adds a listener to this signal: far more than the default 10.
  setMaxListeners(0, shutdown.signal);
  const intake = new IntakeBudget(config.unauthenticatedBodyBytes);
  const authenticator = new Authenticator({
    ...options.operations.principals,
    tokens: options.tokens,
    identifyNeuroSanCallers: !options.operations.access.isOpen,
    trustUserIdMetadata: config.trustUserIdMetadata,
  });
  const pipeline = new CallPipeline({
    logger,
    metrics,
    authenticate: serviceAuthenticator(authenticator),
    forwardedMetadata: config.forwardedRequestMetadata,
    intake,
  });
  // AGENT_MCP_ONLY: neuro-san's clients reach the networks over /mcp alone; Axon's own services stay.
  const served = (service: DescService) => !(config.mcpOnly && neuroSanServices.includes(service));
  const implementations = serviceImplementations(options).filter(({ service }) => served(service));
  const methods = new RpcMethods(implementations);
  const direct = { pipeline, maxRequestBytes: config.maxRequestBytes, shutdownSignal: shutdown.signal };

  const adapter = connectPipeline(pipeline);
  const router = createConnectRouter({
    requestGate: adapter.requestGate,
    interceptors: [adapter.interceptor],
    acceptCompression: [compressionGzip, compressionBrotli],
    readMaxBytes: config.maxRequestBytes,
    shutdownSignal: shutdown.signal,
  });
  for (const { service, implementation } of implementations) {
    // connect-es ignores unknown JSON fields by default; a strict service's Connect streams refuse them as REST does.
    router.service(service, implementation, isStrictService(service) ? { jsonOptions: { ignoreUnknownFields: false } } : {});
  }
  const connectHandlers = new Map<string, UniversalHandler>(router.handlers.map((handler) => [handler.requestPath, handler]));

  const connectUnary = connectUnaryRoute(direct);
  const rest = createRestTranscoder({ services: restServices.filter(served), methods, ...direct });
  const webConsole = serveWebConsole();
  const transferRoutes = createTransferRoutes({ transfers: options.operations.transfers, authenticator, logger });
  // The broker is a stand-in until the database opens: its native calls are looked up per call.
  const native = { request: (call: NativeCall) => options.operations.broker.native.request(call) };
  const inferenceRoutes = createInferenceRoutes({
    ...{ inference: options.operations.inference, native, authenticator, metrics, logger },
    ...{ registry: options.registry, chats: options.chats, access: options.operations.access, maxRequestBytes: config.maxRequestBytes },
  });
  let mcp: Promise<McpHandler> | undefined;
  const mcpHandler = (): Promise<McpHandler> =>
    (mcp ??= import("../mcp/http-transport.js").then(({ createMcpHandler }) =>
      createMcpHandler({
        broker: options.operations.broker,
        authenticator,
        access: options.operations.access,
        operationsFor: options.operations.descriptor.operationsFor,
        registry: options.registry,
        chats: options.chats,
        logger,
        shutdownSignal: shutdown.signal,
        maxRequestBytes: config.maxRequestBytes,
        intake,
      }),
    ));
  let openApi: string | undefined;

  const plainRoutes: Record<string, (res: HttpResponse, req: HttpRequest) => void | Promise<void>> = {
    "/healthz": (res) => writeJson(res, 200, { status: "ok" }),
    "/livez": (res) => writeJson(res, 200, { status: "ok" }),
    "/readyz": (res) => {
      const reason = health.notReadyReason;
      writeJson(res, reason === undefined ? 200 : 503, reason === undefined ? { status: "ready" } : { status: "not ready", reason });
    },
    "/metrics": async (res) => {
      const body = await metrics.scrape();
      res.writeHead(200, { "content-type": metrics.contentType });
      res.end(body);
    },
    "/api/operator/v1/events": (res, req) => serveOperatorEvents(req, res, options.operations.broker, authenticator),
    "/api/v1/docs": (res) => {
      openApi ??= JSON.stringify(buildOpenApi(restServices, { title: "Axon", version: "1" }));
      res.writeHead(200, { "content-type": "application/json" });
      res.end(openApi);
    },
  };

  /** An RPC the fast paths leave (streams, gRPC-Web, the JSON codec, brotli, Connect GET) goes through connect-node. */
  async function serveOnConnectNode(req: HttpRequest, res: HttpResponse, rpc: ResolvedMethod): Promise<void> {
    boundTimeoutHeaders(req.headers);
    const values = new CallValues();
    values.set(protocolKey, protocolOf(req.headers["content-type"]));
    values.set(socketKey, req.socket);
    if (rpc.pathAgentName !== undefined) values.set(pathAgentNameKey, rpc.pathAgentName);
    const connectHandler = connectHandlers.get(requestPath(rpc.spec.method))!;
    const text = isGrpcWebText(req.headers["content-type"]);
    if (text) req.headers["content-type"] = binaryContentType;
    const contentType = req.headers["content-type"];
    const checks = {
      maxBytes: config.maxRequestBytes,
      strict: isStrictService(rpc.spec.method.parent),
      json: contentType?.includes("json") === true,
      encoding: String(req.headers["connect-content-encoding"] ?? req.headers["grpc-encoding"] ?? "") || undefined,
    };
    const request = connectNodeRequest(req, res, values, (body) =>
      adapter.meteredBody(values, req, isEnveloped(contentType) ? checkedEnvelopes(text ? decodedTextBody(body) : body, checks) : body),
    );
    const answer = withAllow(await refuseUndecodable(await connectHandler(request)), connectHandler.allowedMethods);
    const response = closingUnreadBody(req, text ? textResponse(answer) : answer);
    try {
      await universalResponseToNodeResponse(response, res);
    } finally {
      // Counted and logged even when the client has gone (a reset stream) and the answer could not be written.
      adapter.finishRefused(values, response);
    }
  }

  async function handle(req: HttpRequest, res: HttpResponse): Promise<void> {
    const url = req.url ?? "/";
    const query = url.indexOf("?");
    const path = query < 0 ? url : url.slice(0, query);
    if (config.allowCorsHeaders !== undefined) {
      res.setHeader("access-control-allow-origin", "*");
      res.setHeader("access-control-allow-methods", "GET, POST, OPTIONS");
      res.setHeader("access-control-allow-headers", config.allowCorsHeaders);
      if (req.method === "OPTIONS") return void res.writeHead(204).end();
    }
    const plain = req.method === "GET" || req.method === "HEAD" ? plainRoutes[path] : undefined;
    if (plain) return plain(res, req);

    const rpc = methods.resolve(path);
    if (rpc) {
      const unread = unsupportedEncoding(req, path);
      if (unread !== undefined) {
        // gRPC (doc/compression.md) and Connect alike: UNIMPLEMENTED, and the answer says which encodings are read.
        const call = await pipeline.begin({
          ...{ method: rpc.spec.method, protocol: protocolOf(req.headers["content-type"]), pathAgentName: rpc.pathAgentName },
          ...{ header: (name: string) => headerIn(req.headers, name), socket: req.socket },
        });
        const error = call.refusal ?? call.finish(unsupportedEncodingError(unread.encoding))!;
        return writeRefusal(req, res, unread.framing, error, { requestId: call.requestId, acceptEncoding: true });
      }
      return connectUnary(req, res, rpc) ?? serveOnConnectNode(req, res, rpc);
    }
    if (path === mcpPath && config.mcpEnable) return void (await (await mcpHandler()).handle(req, res));
    // OpenAI's /v1 is no REST template's prefix: its calls, whose latency is measured against a bare relay's, skip the REST lookup.
    if (path.startsWith("/v1/")) return void (await inferenceRoutes.handle(req, res));
    // No REST template names a transfer or a console path: REST, which most calls are, is asked first.
    if (await rest.handle(req, res)) return;
    if (await transferRoutes.handle(req, res)) return;
    if (await webConsole.handle(req, res)) return;
    // Connect clients read 404 as UNIMPLEMENTED too; it is what an HTTP client expects of a path that is not there.
    const framing = rpcFramingOf(req, path);
    if (framing) return writeRefusal(req, res, framing, toConnectError(unknownRpc()), { connectHttpStatus: 404 });
    writeStatusError(res, toConnectError(notFound("ROUTE_NOT_FOUND", "no route for this path", { path })), { close: leavesUnreadBody(req) });
  }

  const handler = (req: HttpRequest, res: HttpResponse): void => {
    handle(req, res).catch((error: unknown) => {
      // Handlers answer every failure themselves; what gets here is a broken connection or a bug.
      logger.warn({ err: error, path: req.url }, "response failed");
      if (res.headersSent) res.destroy();
      else writeStatusError(res, toConnectError(error));
    });
  };

  // Unary gRPC is served on the HTTP/2 stream itself; everything else of HTTP/2 reaches `handler`.
  const readOnly = new Set(rest.routes.filter((route) => route.httpMethod === "GET").map((route) => route.method));
  const onHttp2Stream = grpcUnaryRoute(methods, { ...direct, readOnly });

  const listenOn = [config.httpPort, config.grpcPort].filter((port, index) => index === 0 || port > 0);
  const listeners: Listener[] = [];
  const intakeTimeouts = {
    headersTimeoutMs: config.headersTimeoutSeconds * 1000,
    bodyTimeoutMs: config.bodyTimeoutSeconds * 1000,
    idleTimeoutMs: config.idleTimeoutSeconds * 1000,
    answerBodyTimeout: (res: HttpResponse) => writeStatusError(res, toConnectError(bodyTimedOut(config.bodyTimeoutSeconds)), { status: 408 }),
  };
  const tls = config.tls && TlsCredentials.load(config.tls, logger);
  for (const port of listenOn) listeners.push(await listen(handler, { port, host: config.host, onHttp2Stream, tls, ...intakeTimeouts }));

  return {
    ports: listeners.map((listener) => listener.port),
    metrics,
    async close() {
      health.markDraining();
      stopCountingLlmCalls();
      const graceMs = config.shutdownGraceSeconds * 1000;
      const cancelStreams = () => shutdown.abort(new ConnectError("server shutting down", Code.Unavailable));
      await Promise.all(listeners.map((listener) => listener.close(graceMs, cancelStreams)));
    },
  };
}

/**
 * A call connect-node answered before reading its body (refused on its headers) closes its HTTP/1.1 connection:
 * without `Connection: close`, connect-node reads up to 256 KiB of the body before it sends the answer.
 */
function closingUnreadBody(req: HttpRequest, response: UniversalServerResponse): UniversalServerResponse {
  if (!leavesUnreadBody(req)) return response;
  const header = new Headers(response.header);
  header.set("connection", "close");
  return { ...response, header };
}

/** connect-node answers a method it does not serve with 405 alone; RFC 9110 wants Allow on every 405. */
function withAllow(response: UniversalServerResponse, allowed: readonly string[]): UniversalServerResponse {
  if (response.status !== 405) return response;
  const header = new Headers(response.header);
  header.set("allow", allowed.join(", "));
  return { ...response, header };
}

function bodyTimedOut(seconds: number): AxonError {
  return new AxonError(Code.DeadlineExceeded, "REQUEST_BODY_TIMEOUT", "the request body did not arrive in time", {
    metadata: { timeout_seconds: String(seconds) },
  });
}

function protocolOf(contentType: string | undefined): Protocol {
  if (contentType?.startsWith("application/grpc-web")) return "grpc-web";
  if (contentType?.startsWith("application/grpc")) return "grpc";
  return "connect";
}
