import { Code, ConnectError } from "@connectrpc/connect";
import type { IncomingRequest } from "./request-body.js";

/** What the transports read of a request's headers: Node's header objects, HTTP/1.1 and HTTP/2 alike. */
export type RequestHeaders = NodeJS.Dict<string | string[]>;

export function headerIn(headers: RequestHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value.join(", ") : value;
}

/** The request headers as a Headers object, for an implementation that reads `requestHeader`. */
export function toHeaders(headers: RequestHeaders): Headers {
  const result = new Headers();
  for (const [name, value] of Object.entries(headers)) {
    if (name.startsWith(":") || value === undefined) continue;
    for (const item of Array.isArray(value) ? value : [value]) result.append(name, item);
  }
  return result;
}

/**
 * The origin of every request URL the server builds. Never the client's Host: it is input like any other, `[` or
 * `x:99999` make `new URL` throw, and `evil/x?` would change the path a parser sees.
 */
export const requestOrigin = "http://localhost";

/** The URL an implementation sees (HandlerContext.url): the request's path on the fixed origin. */
export function urlOf(path: string): string {
  return `${requestOrigin}${path}`;
}

/** "close" before "finish" means the client went away: the call is cancelled, like a reset gRPC stream. */
export function onClientGone(res: { once(event: "close" | "finish", listener: () => void): unknown }, cancel: (reason: ConnectError) => void): void {
  let finished = false;
  res.once("finish", () => (finished = true));
  res.once("close", () => {
    if (!finished) cancel(new ConnectError("the client closed the connection", Code.Canceled));
  });
}

/**
 * A request answered before its body was read (refused, too large) leaves bytes on an HTTP/1.1 connection: closing
 * it is cheaper than reading them. HTTP/2 resets just the stream.
 */
export function leavesUnreadBody(req: IncomingRequest): boolean {
  return req.httpVersionMajor === 1 && !req.complete;
}
