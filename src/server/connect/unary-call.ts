import { create, fromBinary, fromJson, toBinary, type DescMessage, type Message } from "@bufbuild/protobuf";
import type { ConnectError } from "@connectrpc/connect";
import { codeToHttpStatus, errorToJsonBytes } from "@connectrpc/connect/protocol-connect";
import { acceptsGzip, compressMinBytes, gzip } from "../compression.js";
import { parseConnectTimeout } from "../deadlines.js";
import { typeRegistry } from "../descriptors.js";
import { headerIn, leavesUnreadBody, onClientGone } from "../http-request.js";
import type { HttpResponse } from "../listener.js";
import type { CallPipeline } from "../pipeline/call-pipeline.js";
import { DirectCall } from "../pipeline/direct-call.js";
import { readRequestBody, requestUndecodable, type IncomingRequest } from "../request-body.js";
import { visibleHeaders } from "../response-headers.js";
import type { ResolvedMethod } from "../rpc-methods.js";
import { isStrictService } from "../strict/contract.js";
import { decodeStrictJson, refuseOversizedBody } from "../strict/json-body.js";
import { encodedOnce } from "../frozen-answers.js";
import { responseJson } from "../strict/response-json.js";

export interface ConnectUnaryOptions {
  pipeline: CallPipeline;
  maxRequestBytes: number;
  shutdownSignal: AbortSignal;
}

type ConnectCodec = "json" | "proto";

const jsonContentType = /^application\/json(?:; ?charset=utf-?8)?$/i;

/**
 * The Connect fast path: serves a request for an RPC method when it is a Connect unary call it speaks (POST, JSON or
 * protobuf, identity or gzip), and declines (undefined) anything else: GET, other compressions, streams, gRPC-Web.
 */
export function connectUnaryRoute(options: ConnectUnaryOptions): (req: IncomingRequest, res: HttpResponse, rpc: ResolvedMethod) => Promise<void> | undefined {
  return (req, res, rpc) => {
    const codec = rpc.spec.kind === "unary" ? codecOf(req) : undefined;
    return codec && serveConnectUnary(req, res, rpc, codec, options);
  };
}

function codecOf(req: IncomingRequest): ConnectCodec | undefined {
  if (req.method !== "POST") return undefined;
  const encoding = req.headers["content-encoding"];
  if (encoding !== undefined && encoding !== "identity" && encoding !== "gzip") return undefined;
  const type = req.headers["content-type"] ?? "";
  if (type === "application/proto") return "proto";
  return jsonContentType.test(type) ? "json" : undefined;
}

/**
 * One Connect unary call (connectrpc.com/docs/protocol): the pipeline opens it on the headers, the body is the request
 * message in the request's codec, and the answer is the response message with HTTP 200, or the Connect error JSON with
 * the code's HTTP status. Response headers travel as headers, trailers as `trailer-` headers.
 */
async function serveConnectUnary(req: IncomingRequest, res: HttpResponse, target: ResolvedMethod, codec: ConnectCodec, options: ConnectUnaryOptions): Promise<void> {
  const { method } = target.spec;
  const requestHeaders = req.headers;
  const header = (name: string): string | undefined => headerIn(requestHeaders, name);
  const opened = options.pipeline.begin({ method, protocol: "connect", header, pathAgentName: target.pathAgentName, socket: req.socket });
  const call = opened instanceof Promise ? await opened : opened;
  const strict = isStrictService(method.parent);
  const own = call.ownHeaders;
  const answerError = (status: ConnectError): void => {
    if (res.headersSent || res.writableEnded) return;
    const headers = visibleHeaders({ "content-type": "application/json", ...own }, status.metadata);
    if (leavesUnreadBody(req)) headers.connection = "close";
    send(res, codeToHttpStatus(status.code), headers, errorToJsonBytes(status, {}));
  };
  let timeoutMs: number | undefined;
  try {
    if (call.refusal !== undefined) throw call.refusal;
    timeoutMs = parseConnectTimeout(header("connect-timeout-ms"));
  } catch (error) {
    return answerError(call.finish(error)!);
  }

  const context = new DirectCall({
    call,
    spec: target.spec,
    protocolName: "connect",
    requestMethod: "POST",
    headers: requestHeaders,
    path: req.url ?? "/",
    timeoutMs,
    shutdownSignal: options.shutdownSignal,
    answerError,
  });
  try {
    // A client that leaves while its body is read fails the read (CANCELED).
    const bytes = await readRequestBody(req, options.maxRequestBytes, { allowGzip: true, tally: call.bodyTally() });
    const request = strict ? decodeStrict(method.input, codec, bytes) : decode(method.input, codec, bytes);
    const answered = context.unary(request);
    // A client can only leave while its answer is awaited: one given at once (List) needs no watching.
    if (answered instanceof Promise) onClientGone(res, (reason) => context.abort(reason));
    const response = answered instanceof Promise ? await answered : answered;
    let body: Uint8Array =
      codec === "proto"
        ? encodedOnce(response, toBinary, () => toBinary(method.output, response))
        : encodedOnce(response, responseJson, () => Buffer.from(JSON.stringify(responseJson(method, response))));
    const gzipped = body.byteLength >= compressMinBytes && acceptsGzip(header("accept-encoding"));
    if (gzipped) body = await gzip(body);
    if (!context.succeed()) return;
    const { header: sentHeader, trailer } = context.sentHeaders;
    const headers = visibleHeaders({ "content-type": codec === "proto" ? "application/proto" : "application/json", ...own }, sentHeader);
    if (gzipped) headers["content-encoding"] = "gzip";
    if (trailer !== undefined) for (const [name, value] of Object.entries(visibleHeaders({}, trailer))) headers[`trailer-${name}`] = value;
    send(res, 200, headers, body);
  } catch (error) {
    context.fail(error);
  }
}

// Unknown fields are ignored, as connect-node's routes and REST read them (a strict service refuses them everywhere).
const jsonReadOptions = { registry: typeRegistry, ignoreUnknownFields: true };

function decode(schema: DescMessage, codec: ConnectCodec, bytes: Uint8Array): Message {
  try {
    if (codec === "proto") return fromBinary(schema, bytes);
    // No body, or `{}` (what clients send for a request with no field set), is the empty message: nothing to parse.
    if (bytes.byteLength === 0 || (bytes.byteLength === 2 && bytes[0] === 0x7b && bytes[1] === 0x7d)) return create(schema);
    return fromJson(schema, JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8")), jsonReadOptions);
  } catch (error) {
    throw requestUndecodable(codec === "json" && error instanceof Error ? error.message : undefined);
  }
}

/** A strict service's body: JSON read as strictly as on REST, protobuf as usual; both within 2 MiB. */
function decodeStrict(schema: DescMessage, codec: ConnectCodec, bytes: Uint8Array): Message {
  if (codec === "json") return decodeStrictJson(schema, bytes);
  refuseOversizedBody(bytes.byteLength);
  return decode(schema, codec, bytes);
}

function send(res: HttpResponse, status: number, headers: Record<string, string>, body: Uint8Array): void {
  headers["content-length"] = String(body.byteLength);
  (res as { writeHead(status: number, headers: Record<string, string>): unknown }).writeHead(status, headers);
  (res as { end(chunk: Uint8Array): unknown }).end(body);
}
