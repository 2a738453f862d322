import http2 from "node:http2";
import { Code, ConnectError } from "@connectrpc/connect";
import { codeToHttpStatus, endStreamToJson, errorToJsonBytes } from "@connectrpc/connect/protocol-connect";
import { grpcStatusHeaders } from "./grpc/status-headers.js";
import { leavesUnreadBody } from "./http-request.js";
import type { HttpRequest, HttpResponse } from "./listener.js";
import { visibleHeaders } from "./response-headers.js";

/** The request encodings some route reads (the fast paths gzip, connect-node gzip and brotli). */
export const acceptedEncodings = "gzip,br";

/** The RPC protocol a request speaks, by its content type; undefined for one that is not an RPC (REST, a browser). */
export type RpcFraming = "grpc" | "grpc-web" | "connect-stream" | "connect-unary";

export function rpcFramingOf(req: HttpRequest, path: string): RpcFraming | undefined {
  const type = req.headers["content-type"] ?? "";
  if (type.startsWith("application/grpc-web")) return "grpc-web";
  if (type.startsWith("application/grpc")) return "grpc";
  if (type.startsWith("application/connect+")) return "connect-stream";
  // A Connect unary call looks like REST on the wire: its path (`/package.Service/Method`) or its version header tell.
  const connectType = /^application\/(json|proto)\b/.test(type);
  if (req.headers["connect-protocol-version"] !== undefined || (connectType && req.method === "POST" && rpcPath.test(path))) return "connect-unary";
  return undefined;
}

const rpcPath = /^\/[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)+\/[A-Za-z_]\w*$/;

/**
 * The RPC's framing and its encoding header, when that header names an encoding no route reads. Most requests name
 * none, or one that is read: their framing is not worked out at all.
 */
export function unsupportedEncoding(req: HttpRequest, path: string): { framing: RpcFraming; encoding: string } | undefined {
  const { headers } = req;
  if (!isUnread(headers["content-encoding"]) && !isUnread(headers["connect-content-encoding"]) && !isUnread(headers["grpc-encoding"])) return undefined;
  const framing = rpcFramingOf(req, path);
  if (framing === undefined) return undefined;
  const encoding = headers[framing === "connect-unary" ? "content-encoding" : framing === "connect-stream" ? "connect-content-encoding" : "grpc-encoding"];
  return isUnread(encoding) ? { framing, encoding } : undefined;
}

/** Whether an encoding header names an encoding no route reads. */
function isUnread(encoding: string | string[] | undefined): encoding is string {
  return typeof encoding === "string" && encoding !== "identity" && encoding !== "gzip" && encoding !== "br";
}

export function unsupportedEncodingError(encoding: string): ConnectError {
  return new ConnectError(`unknown compression "${encoding}": supported encodings are ${acceptedEncodings}`, Code.Unimplemented);
}

export const unknownRpc = (): ConnectError => new ConnectError("no such service or method", Code.Unimplemented);

/**
 * Answers an RPC that no implementation will see (an unknown method, an unreadable encoding) in the framing its client
 * reads: a trailers-only answer for gRPC and gRPC-Web, an end-of-stream message for Connect streams, the error JSON
 * with the code's HTTP status (or `connectHttpStatus`) for Connect unary. `acceptEncoding` lists what the server reads,
 * under the framing's name.
 */
export function writeRefusal(
  req: HttpRequest,
  res: HttpResponse,
  framing: RpcFraming,
  error: ConnectError,
  options: { requestId?: string; acceptEncoding?: boolean; connectHttpStatus?: number } = {},
): void {
  const headers = visibleHeaders({}, error.metadata);
  if (options.requestId !== undefined) headers["x-request-id"] = options.requestId;
  const contentType = req.headers["content-type"] ?? "";
  if (framing === "grpc" || framing === "grpc-web") {
    Object.assign(headers, grpcStatusHeaders(error), { "content-type": contentType.split(";")[0]! });
    if (options.acceptEncoding) headers["grpc-accept-encoding"] = acceptedEncodings;
    if ("stream" in req) {
      // HTTP/2: one HEADERS frame that ends the stream, what gRPC clients read as trailers-only.
      const { stream } = req;
      if (stream.destroyed) return;
      stream.respond({ ":status": 200, ...headers }, { endStream: true });
      if (!stream.readableEnded) stream.close(http2.constants.NGHTTP2_NO_ERROR);
      return;
    }
    return send(req, res, 200, headers);
  }
  if (framing === "connect-stream") {
    headers["content-type"] = contentType;
    if (options.acceptEncoding) headers["connect-accept-encoding"] = acceptedEncodings;
    const json = Buffer.from(JSON.stringify(endStreamToJson(new Headers(), error, {})));
    const frame = Buffer.alloc(5 + json.byteLength);
    frame[0] = 0b10;
    frame.writeUInt32BE(json.byteLength, 1);
    json.copy(frame, 5);
    return send(req, res, 200, headers, frame);
  }
  headers["content-type"] = "application/json";
  if (options.acceptEncoding) headers["accept-encoding"] = acceptedEncodings;
  send(req, res, options.connectHttpStatus ?? codeToHttpStatus(error.code), headers, errorToJsonBytes(error, {}));
}

function send(req: HttpRequest, res: HttpResponse, status: number, headers: Record<string, string>, body?: Uint8Array): void {
  if (res.headersSent) return;
  if (leavesUnreadBody(req)) headers.connection = "close";
  headers["content-length"] = String(body?.byteLength ?? 0);
  (res as { writeHead(status: number, headers: Record<string, string>): unknown }).writeHead(status, headers);
  (res as { end(chunk?: Uint8Array): unknown }).end(body);
}
