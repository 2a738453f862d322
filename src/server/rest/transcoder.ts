import { toJson, type DescService, type JsonObject, type JsonValue, type Message } from "@bufbuild/protobuf";
import { Code, ConnectError, type MethodImplSpec } from "@connectrpc/connect";
import { httpStatusKey, streamStartKey } from "../context.js";
import { parseConnectTimeout } from "../deadlines.js";
import { typeRegistry } from "../descriptors.js";
import { headerIn, leavesUnreadBody, onClientGone, requestOrigin } from "../http-request.js";
import type { Call, CallPipeline } from "../pipeline/call-pipeline.js";
import { DirectCall } from "../pipeline/direct-call.js";
import { readRequestBody, type IncomingRequest } from "../request-body.js";
import type { RpcMethods } from "../rpc-methods.js";
import { statusJson } from "../status.js";
import { compileRestRoutes, findRoute, literalRoutes, type RestRoute, type RouteMatch } from "./http-rule.js";
import { writeJsonBody, writeStatusError, type ResponseSink } from "./http-response.js";
import { encodedOnce } from "../frozen-answers.js";
import { JsonLinesWriter } from "./json-lines-writer.js";
import { withNeuroSanFields } from "./neuro-san-json.js";
import { parseJsonText } from "./lenient-json.js";
import { buildRequestMessage } from "./request-message.js";
import { isStrictService } from "../strict/contract.js";
import { parseStrictBody } from "../strict/json-body.js";
import { responseJson } from "../strict/response-json.js";

export type { RestRoute } from "./http-rule.js";

export interface RestTranscoderOptions {
  /** The services whose http rules become routes. */
  services: readonly DescService[];
  /** Their implementations: REST calls them directly. */
  methods: RpcMethods;
  pipeline: CallPipeline;
  maxRequestBytes: number;
  /** Aborted once the shutdown grace has run out: what still streams is cancelled. */
  shutdownSignal: AbortSignal;
}

export interface RestTranscoder {
  readonly routes: readonly RestRoute[];
  /** Returns false when no rule matches the path (caller answers 404). */
  handle(req: IncomingRequest, res: ResponseSink): Promise<boolean>;
}

/**
 * google.api.http transcoding: a REST request becomes the protobuf request of its RPC (path, query and JSON body,
 * read leniently), the service implementation answers it directly through the call pipeline, and the answer becomes
 * JSON (unary) or json-lines (server streams) with `toJson`. No Connect round trip: JSON in, message, JSON out.
 */
export function createRestTranscoder(options: RestTranscoderOptions): RestTranscoder {
  const routes = compileRestRoutes(options.services);
  const literal = literalRoutes(routes);
  const specs = new Map(routes.map((route) => [route.method, implementationOf(options.methods, route)]));

  async function handle(req: IncomingRequest, res: ResponseSink): Promise<boolean> {
    const target = req.url ?? "/";
    // HEAD is GET without the body (RFC 9110 §9.3.2): Node's responses drop the body of a HEAD request themselves.
    const verb = req.method === "HEAD" ? "GET" : (req.method ?? "GET");
    // Most calls name a plain path with no query: one lookup, no URL to parse.
    const plain = literal.get(verb)?.get(target);
    const url = plain ? undefined : pathUrl(target);
    const match = plain ?? (url === undefined ? noRoute : findRoute(routes, verb, url.pathname));
    if (match.kind === "none") return false;
    if (match.kind === "wrong-method") {
      // As grpc-gateway does: the path exists, the verb is not served, which gRPC calls UNIMPLEMENTED;
      // the HTTP status says exactly that, and Allow lists what is.
      const allowed = match.allowedMethods.includes("GET") ? [...match.allowedMethods, "HEAD"] : match.allowedMethods;
      res.setHeader("allow", allowed.join(", "));
      writeStatusError(res, new ConnectError("method not allowed", Code.Unimplemented), { status: 405, close: leavesUnreadBody(req) });
      return true;
    }
    const { route, variables } = match;
    const strict = isStrictService(route.method.parent);
    const { headers } = req;
    const header = (name: string): string | undefined => headerIn(headers, name);
    const opened = options.pipeline.begin({ method: route.method, protocol: "rest", header, socket: req.socket, http: { method: req.method ?? "GET", route: route.pathTemplate.template } });
    const call = opened instanceof Promise ? await opened : opened;
    const own = call.ownHeaders;
    let writer: JsonLinesWriter | undefined;
    const answerError = (status: ConnectError): void => {
      if (writer?.started) {
        // After the 200 went out, the error is one more line (neuro-san's convention), then the end.
        void writer.writeLine(statusJson(status)).then(() => writer!.end());
      } else if (!res.headersSent && !res.writableEnded) {
        writeStatusError(res, status, { headers: status.metadata, own, close: leavesUnreadBody(req) });
      }
    };
    let timeoutMs: number | undefined;
    try {
      if (call.refusal !== undefined) throw call.refusal;
      timeoutMs = parseConnectTimeout(header("connect-timeout-ms"));
    } catch (error) {
      answerError(call.finish(error)!);
      return true;
    }

    const context = new DirectCall({
      call,
      spec: specs.get(route.method)!,
      protocolName: "rest",
      requestMethod: req.method ?? "GET",
      headers,
      path: req.url ?? "/",
      timeoutMs,
      shutdownSignal: options.shutdownSignal,
      answerError,
    });
    try {
      // A client that leaves while its body is read fails the read (CANCELED).
      const bytes = route.body === "" ? undefined : await readRequestBody(req, options.maxRequestBytes, { tally: call.bodyTally() });
      const body = bytes === undefined ? undefined : strict ? parseStrictBody(bytes) : parseJsonText(bytes);
      const request = buildRequestMessage(route, { variables, query: url?.searchParams ?? noQuery, body, strict });
      if (route.method.methodKind === "server_streaming") {
        const clientGone = new AbortController();
        onClientGone(res, (reason) => {
          clientGone.abort(reason);
          context.abort(reason);
        });
        writer = new JsonLinesWriter(res, clientGone.signal, own);
        await streamJsonLines(route, context, call, writer, request);
      } else {
        const answered = context.unary(request);
        // A client can only leave while its answer is awaited: one given at once (List) needs no watching.
        if (answered instanceof Promise) onClientGone(res, (reason) => context.abort(reason));
        const response = answered instanceof Promise ? await answered : answered;
        const body = encodedOnce(response, route, () => Buffer.from(JSON.stringify(restResponseJson(route, response))));
        if (context.succeed()) writeJsonBody(res, call.values.get(httpStatusKey), body, context.sentHeaders.header, own);
      }
    } catch (error) {
      context.fail(error);
    }
    return true;
  }

  return { routes, handle };
}

/**
 * The JSON of a unary REST answer: the response message, or the field its rule's `response_body` names, in canonical
 * protobuf JSON. The one place a REST unary answer is produced.
 */
export function restResponseJson(route: RestRoute, response: Message): JsonValue {
  const { output } = route.method;
  const json = withNeuroSanFields(route.method, responseJson(route.method, response)) as JsonObject;
  if (route.responseBody === "") return json;
  const field = output.fields.find((candidate) => candidate.name === route.responseBody)!;
  return json[field.jsonName] ?? {};
}

/**
 * neuro-san's json-lines stream: the 200 and the headers go out when the implementation says the stream has started
 * (errors before that are plain HTTP errors), then one line per message as it is produced.
 */
async function streamJsonLines(route: RestRoute, context: DirectCall, call: Call, writer: JsonLinesWriter, request: Message): Promise<void> {
  const start = (): void => {
    writer.start(context.sentHeaders.header);
    call.streamStarted();
  };
  call.values.set(streamStartKey, start);
  for await (const message of context.serverStream(request)) {
    if (context.isAnswered) return;
    start();
    await writer.writeLine(toJson(route.method.output, message, { registry: typeRegistry }));
  }
  // A stream that ended cleanly is a 200 even when it carried no message.
  if (!context.isAnswered) start();
  if (context.succeed()) writer.end();
}

const noRoute: RouteMatch = { kind: "none" };
const noQuery = new URLSearchParams();

/**
 * The request target on the server's fixed origin, never on the client's Host; undefined for a target that is not a
 * path (absolute-form, `*`), which names no route.
 */
function pathUrl(target: string): URL | undefined {
  if (!target.startsWith("/")) return undefined;
  try {
    return new URL(`${requestOrigin}${target}`);
  } catch {
    return undefined;
  }
}

function implementationOf(methods: RpcMethods, route: RestRoute): MethodImplSpec {
  const spec = methods.of(route.method);
  if (spec === undefined) throw new Error(`REST route ${route.httpMethod} ${route.template} has no implementation`);
  return spec;
}
