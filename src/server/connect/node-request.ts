import type { ContextValues } from "@connectrpc/connect";
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
  return { ...request, body: meter(request.body as AsyncIterable<Uint8Array>) };
}
