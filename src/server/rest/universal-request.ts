import type { ContextValues } from "@connectrpc/connect";
import { encodeEnvelope, type UniversalServerRequest } from "@connectrpc/connect/protocol";
import type { RestIncomingRequest } from "./request-body.js";

/** How the transcoder speaks to the router: Connect with binary messages, the cheapest codec in-process. */
export const unaryContentType = "application/proto";
export const streamContentType = "application/connect+proto";

/**
 * The Connect request a REST call becomes. The client's headers travel on (auth, request ids, metadata
 * to forward) so interceptors see the same call they would over gRPC; only what describes the REST
 * body or the hop is replaced.
 */
export function createUniversalRequest(options: {
  req: RestIncomingRequest;
  requestPath: string;
  streaming: boolean;
  message: Uint8Array;
  signal: AbortSignal;
  contextValues: ContextValues;
}): UniversalServerRequest {
  const { req, streaming, message } = options;
  const header = forwardedHeaders(req.headers);
  header.set("content-type", streaming ? streamContentType : unaryContentType);
  header.set("connect-protocol-version", "1");
  const host = firstValue(req.headers[":authority"]) ?? firstValue(req.headers.host) ?? "localhost";
  // A stream carries one message in one envelope: flags 0, then its length.
  const body = streaming ? encodeEnvelope(0, message) : message;
  return {
    httpVersion: req.httpVersion,
    url: `http://${host}${options.requestPath}`,
    method: "POST",
    header,
    body: singleChunk(body),
    signal: options.signal,
    contextValues: options.contextValues,
  };
}

// The body's framing and encoding are ours now; hop-by-hop headers and HTTP/2 pseudo headers do not
// cross; Connect's own negotiation headers from a REST client would misdescribe our body (only the
// timeout keeps its meaning).
const droppedHeaders = new Set([
  "content-type",
  "content-length",
  "content-encoding",
  "accept-encoding",
  "transfer-encoding",
  "connection",
  "keep-alive",
  "upgrade",
  "te",
  "host",
]);

export function forwardedHeaders(incoming: RestIncomingRequest["headers"]): Headers {
  const header = new Headers();
  for (const [name, value] of Object.entries(incoming)) {
    if (value === undefined || name.startsWith(":") || droppedHeaders.has(name)) continue;
    if (name.startsWith("connect-") && name !== "connect-timeout-ms") continue;
    for (const item of Array.isArray(value) ? value : [value]) header.append(name, item);
  }
  return header;
}

function firstValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

async function* singleChunk(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes;
}
