import type * as http from "node:http";
import type * as http2 from "node:http2";
import { fromBinary, toBinary, toJson, type DescMethod, type DescService, type JsonObject } from "@bufbuild/protobuf";
import { Code, ConnectError, type ContextValues } from "@connectrpc/connect";
import type { UniversalHandler } from "@connectrpc/connect/protocol";
import { httpStatusKey, protocolKey, streamStartKey } from "../context.js";
import { typeRegistry } from "../descriptors.js";
import { toConnectError } from "../status.js";
import { errorOfConnectResponse, readAllBytes } from "./connect-response.js";
import { compileRestRoutes, findRoute, type RestRoute } from "./http-rule.js";
import { writeJson, writeStatusError, type ResponseSink } from "./http-response.js";
import { JsonLinesWriter } from "./json-lines-writer.js";
import { withNeuroSanFields } from "./neuro-san-json.js";
import { parseJsonText } from "./lenient-json.js";
import { readRequestBody, type RestIncomingRequest } from "./request-body.js";
import { buildRequestMessage } from "./request-message.js";
import { writeStreamResponse } from "./stream-response.js";
import { createUniversalRequest } from "./universal-request.js";

export type { RestRoute } from "./http-rule.js";

export interface RestTranscoderOptions {
  /** The Connect router's handlers: REST runs through them, interceptors included. */
  handlers: readonly UniversalHandler[];
  /** The services whose http rules become routes. */
  services: readonly DescService[];
  maxRequestBytes: number;
}

export interface RestTranscoder {
  readonly routes: readonly RestRoute[];
  /** Returns false when no rule matches the path (caller answers 404). */
  handle(
    req: http.IncomingMessage | http2.Http2ServerRequest,
    res: http.ServerResponse | http2.Http2ServerResponse,
    contextValues: ContextValues,
  ): Promise<boolean>;
}

/**
 * google.api.http transcoding over the Connect router: a REST request becomes the protobuf request
 * of its RPC, is served by the same in-process handler as gRPC and Connect, and its answer becomes
 * JSON (unary) or json-lines (server streams).
 */
export function createRestTranscoder(options: RestTranscoderOptions): RestTranscoder {
  const routes = compileRestRoutes(options.services);
  const handlers = new Map(routes.map((route) => [route.method, handlerFor(options.handlers, route.method)]));

  async function handle(req: RestIncomingRequest, res: ResponseSink, contextValues: ContextValues): Promise<boolean> {
    const url = new URL(req.url ?? "/", "http://localhost");
    const match = findRoute(routes, req.method ?? "GET", url.pathname);
    if (match.kind === "none") return false;
    if (match.kind === "wrong-method") {
      // As grpc-gateway does: the path exists, the verb is not served, which gRPC calls UNIMPLEMENTED;
      // the HTTP status says exactly that, and Allow lists what is.
      res.setHeader("allow", match.allowedMethods.join(", "));
      writeStatusError(res, new ConnectError("method not allowed", Code.Unimplemented), { status: 405 });
      return true;
    }

    const { route, variables } = match;
    contextValues.set(protocolKey, "rest");
    const abort = abortOnDisconnect(res);
    try {
      const body = route.body === "" ? undefined : parseJsonText(await readRequestBody(req, options.maxRequestBytes));
      const message = buildRequestMessage(route, { variables, query: url.searchParams, body });
      const streaming = route.method.methodKind === "server_streaming";
      const writer = streaming ? new JsonLinesWriter(res, abort.signal) : undefined;
      if (writer !== undefined) contextValues.set(streamStartKey, () => writer.start());

      const handler = handlers.get(route.method)!;
      const response = await handler(
        createUniversalRequest({
          req,
          requestPath: handler.requestPath,
          streaming,
          message: toBinary(route.method.input, message),
          signal: abort.signal,
          contextValues,
        }),
      );
      if (writer !== undefined) {
        await writeStreamResponse({ res, method: route.method, response, writer, signal: abort.signal });
      } else {
        const status = response.status === 200 ? contextValues.get(httpStatusKey) : response.status;
        writeUnaryResponse(res, route, status, await readAllBytes(response.body), response.header);
      }
    } catch (error) {
      if (!abort.signal.aborted && !res.headersSent) {
        writeStatusError(res, toConnectError(error), { headers: closeAfterHttp1(req) });
      } else if (!res.writableEnded) {
        res.end();
      }
    }
    return true;
  }

  return { routes, handle };
}

function writeUnaryResponse(res: ResponseSink, route: RestRoute, status: number, body: Uint8Array, header: Headers | undefined): void {
  if (status >= 300) {
    writeStatusError(res, errorOfConnectResponse(status, body, header), { headers: header });
    return;
  }
  const { output } = route.method;
  const message = toJson(output, fromBinary(output, body), { registry: typeRegistry }) as JsonObject;
  const field = output.fields.find((candidate) => candidate.name === route.responseBody);
  writeJson(res, status, withNeuroSanFields(route.method, field ? (message[field.jsonName] ?? {}) : message), header);
}

function handlerFor(handlers: readonly UniversalHandler[], method: DescMethod): UniversalHandler {
  const requestPath = `/${method.parent.typeName}/${method.name}`;
  const handler = handlers.find((candidate) => candidate.method === method) ?? handlers.find((candidate) => candidate.requestPath === requestPath);
  if (handler === undefined) throw new Error(`REST route for ${requestPath} has no handler in the router`);
  return handler;
}

// "close" before "finish" means the client went away: the call is cancelled like a reset gRPC stream.
function abortOnDisconnect(res: ResponseSink): AbortController {
  const abort = new AbortController();
  let finished = false;
  res.once("finish", () => {
    finished = true;
  });
  res.once("close", () => {
    if (!finished) abort.abort(new ConnectError("client closed the connection", Code.Canceled));
  });
  return abort;
}

// A request refused before its body was read (too large, say) leaves bytes on an HTTP/1 connection:
// closing it is cheaper than reading them. HTTP/2 resets just the stream.
function closeAfterHttp1(req: RestIncomingRequest): Headers | undefined {
  return req.httpVersionMajor === 1 && !req.complete ? new Headers({ connection: "close" }) : undefined;
}
