import type { UniversalServerResponse } from "@connectrpc/connect/protocol";

/**
 * gRPC-Web's text mode (PROTOCOL-WEB.md, what `protoc-gen-grpc-web mode=grpcwebtext` clients send): the body of
 * `application/grpc-web` in base64, both ways; protobuf is its only codec. connect-node does not speak it, so its
 * routes are handed the binary body and their answer is encoded back.
 */
export function isGrpcWebText(contentType: string | undefined): boolean {
  return contentType?.startsWith("application/grpc-web-text") === true;
}

export const binaryContentType = "application/grpc-web+proto";
const textContentType = "application/grpc-web-text+proto";

/**
 * The request body decoded. A sender may pad each chunk it flushes, so padding can appear inside the body: every
 * padded group ends a piece that decodes on its own; an unpadded tail shorter than four characters waits for more.
 */
export async function* decodedTextBody(body: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array> {
  let pending = "";
  for await (const chunk of body) {
    pending += Buffer.from(chunk).toString("latin1").replace(/\s+/g, "");
    const whole = pending.length - (pending.length % 4);
    if (whole === 0) continue;
    yield decodePieces(pending.slice(0, whole));
    pending = pending.slice(whole);
  }
  // A tail that is not a whole group is base64 a client would not send; decoded as far as it goes, the envelope check
  // downstream finds the message short.
  if (pending.length > 0) yield decodePieces(pending);
}

function decodePieces(text: string): Buffer {
  if (!text.includes("=")) return Buffer.from(text, "base64");
  return Buffer.concat(text.split(/(?<==)(?=[^=])/).map((piece) => Buffer.from(piece, "base64")));
}

/** The answer in text mode: each chunk connect-node writes goes out base64-encoded and padded, flushed as it comes. */
export function textResponse(response: UniversalServerResponse): UniversalServerResponse {
  const header = new Headers(response.header);
  if (header.has("content-type")) header.set("content-type", textContentType);
  const { body } = response;
  if (body === undefined || !(Symbol.asyncIterator in body)) return { ...response, header };
  return { ...response, header, body: encodedChunks(body) };
}

async function* encodedChunks(body: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array> {
  for await (const chunk of body) yield Buffer.from(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString("base64"), "latin1");
}
