import http2, { type ServerHttp2Stream } from "node:http2";
import { Code, ConnectError, type ContextValues } from "@connectrpc/connect";
import { universalRequestFromNodeRequest } from "@connectrpc/connect-node";
import type { UniversalServerRequest } from "@connectrpc/connect/protocol";
import { requestOrigin } from "../http-request.js";
import type { HttpRequest, HttpResponse } from "../listener.js";

/**
 * A Node request as connect-node's routes read it, with two changes. Its URL is on a fixed origin: connect-node builds
 * it from Host (or :authority), which is client input, and a Host such as `[` or `x:99999` makes that `new URL` throw,
 * a 500 for the client's mistake. Its body goes through `meter` (the intake budget) as connect-node reads it.
 */
export function connectNodeRequest(
  req: HttpRequest,
  res: HttpResponse,
  values: ContextValues,
  meter: (body: AsyncIterable<Uint8Array>) => AsyncIterable<Uint8Array>,
): UniversalServerRequest {
  const name = "authority" in req ? ":authority" : "host";
  const headers = req.headers as Record<string, string | string[] | undefined>;
  const authority = headers[name];
  headers[name] = new URL(requestOrigin).host;
  let request: UniversalServerRequest;
  try {
    request = universalRequestFromNodeRequest(req, res, undefined, values);
  } finally {
    if (authority === undefined) delete headers[name];
    else headers[name] = authority;
  }
  // The implementation still sees the Host the client sent.
  if (name === "host") {
    if (typeof authority === "string") request.header.set("host", authority);
    else request.header.delete("host");
  }
  const body = request.body as AsyncIterable<Uint8Array>;
  return { ...request, body: meter("stream" in req ? unlessReset(req.stream, body) : body) };
}

/**
 * An HTTP/2 body that ends because its stream was reset (RST_STREAM before END_STREAM) ends like a complete one; the
 * reset is known a turn of the loop later. A cancelled request is never handed to the implementation.
 */
async function* unlessReset(stream: ServerHttp2Stream, body: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array> {
  yield* body;
  await new Promise((resolve) => setImmediate(resolve));
  if (stream.destroyed && stream.rstCode !== http2.constants.NGHTTP2_NO_ERROR) throw new ConnectError("the client cancelled the call", Code.Canceled);
}
