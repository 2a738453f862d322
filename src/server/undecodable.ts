import type { UniversalServerResponse } from "@connectrpc/connect/protocol";
import { errorToJsonBytes } from "@connectrpc/connect/protocol-connect";
import { setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { requestUndecodable } from "./request-body.js";
import { toConnectError } from "./status.js";

/**
 * connect-es answers a request body that does not decode as the method's request message with INTERNAL ("parse
 * binary: ..."), the mapping it shares with clients reading a bad response. On a server that is the caller's mistake,
 * so on connect-node's routes it becomes INVALID_ARGUMENT (category rejected) where the status travels outside the
 * body: Connect unary (GET, brotli) and gRPC trailers (streams, the JSON codec, brotli). gRPC-Web and Connect streams
 * carry their status inside the body with HTTP 200 and keep the library's mapping. The fast paths refuse such bodies
 * themselves (`requestUndecodable`).
 */
export async function refuseUndecodable(response: UniversalServerResponse): Promise<UniversalServerResponse> {
  const { body, trailer } = response;
  if (!body || !(Symbol.asyncIterator in body)) return response;
  if (trailer) return { ...response, body: rewritingTrailer(body, trailer) };
  if (response.status !== 500 || response.header?.get("content-encoding")) return response;

  const chunks: Uint8Array[] = [];
  for await (const chunk of body) chunks.push(chunk);
  const bytes = Buffer.concat(chunks);
  if (!isUndecodable(parsedMessage(bytes))) return { ...response, body: single(bytes) };
  const refusal = errorToJsonBytes(undecodable(), {});
  const header = new Headers(response.header);
  header.set("content-length", String(refusal.byteLength));
  return { ...response, status: 400, header, body: single(refusal) };
}

async function* rewritingTrailer(body: AsyncIterable<Uint8Array>, trailer: Headers): AsyncIterable<Uint8Array> {
  yield* body;
  // The trailers are written once the body has ended: the status is final by now, and not yet sent.
  if (trailer.get("grpc-status") === "13" && isUndecodable(decodeURIComponent(trailer.get("grpc-message") ?? ""))) {
    setTrailerStatus(trailer, undecodable());
  }
}

const undecodable = () => toConnectError(requestUndecodable());

const isUndecodable = (message: string | undefined) => message?.startsWith("parse binary: ") === true;

function parsedMessage(bytes: Buffer): string | undefined {
  try {
    const { message } = JSON.parse(bytes.toString("utf8")) as { message?: unknown };
    return typeof message === "string" ? message : undefined;
  } catch {
    return undefined;
  }
}

async function* single(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes;
}
