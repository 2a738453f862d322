import { inflateBounded, isInflatable } from "../compression.js";
import { requestTooLarge, requestUndecodable } from "../request-body.js";
import { toConnectError } from "../status.js";
import { maxStrictBodyBytes } from "../strict/contract.js";
import { parseStrictBody, refuseOversizedBody } from "../strict/json-body.js";

/** A request body of length-prefixed messages: Connect streams, gRPC and gRPC-Web (its text form once decoded). */
export function isEnveloped(contentType: string | undefined): boolean {
  return contentType !== undefined && /^application\/(connect\+|grpc(-web)?($|[+;]))/.test(contentType);
}

export interface EnvelopeChecks {
  /** The server-wide bound on one message, refused as REST refuses a body (REQUEST_TOO_LARGE, category rejected). */
  maxBytes: number;
  /** A strict service (agent-v1.md §11): messages of at most 2 MiB, and JSON ones read as strictly as a REST body. */
  strict: boolean;
  json: boolean;
  /** How a message flagged compressed is encoded (`connect-content-encoding` / `grpc-encoding`). */
  encoding: string | undefined;
}

/**
 * The body of an enveloped call, checked message by message before connect-node decodes it: a message declared too large
 * is refused before it is read (connect-node's own limit would call it RESOURCE_EXHAUSTED, as if a quota ran out), and
 * a strict service's JSON gets REST's strict reading, since protobuf-es parses with `JSON.parse`, which keeps the last
 * of duplicate keys (a compressed message is inflated for it, within the same bound). The chunks pass on unchanged.
 */
export async function* checkedEnvelopes(body: AsyncIterable<Uint8Array>, checks: EnvelopeChecks): AsyncIterable<Uint8Array> {
  let pending: Buffer = Buffer.alloc(0);
  // What is left of a message that needs no reading, so a large one is never held.
  let skip = 0;
  const encoding = isInflatable(checks.encoding) ? checks.encoding : undefined;
  for await (const chunk of body) {
    const unread = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).subarray(Math.min(skip, chunk.byteLength));
    skip -= chunk.byteLength - unread.byteLength;
    pending = pending.byteLength === 0 ? unread : Buffer.concat([pending, unread]);
    while (pending.byteLength >= headerBytes) {
      const end = headerBytes + pending.readUInt32BE(1);
      const compressed = (pending[0]! & compressedFlag) !== 0;
      // A compressed message in an encoding connect-node does not read is refused there.
      const strictJson = checks.strict && checks.json && (!compressed || encoding !== undefined);
      try {
        if (end - headerBytes > checks.maxBytes) throw requestTooLarge(checks.maxBytes);
        if (checks.strict) refuseOversizedBody(end - headerBytes);
        if (!strictJson) {
          skip = Math.max(0, end - pending.byteLength);
          pending = pending.subarray(Math.min(end, pending.byteLength));
          continue;
        }
        if (pending.byteLength < end) break;
        const message = pending.subarray(headerBytes, end);
        parseStrictBody(compressed && encoding ? await inflateBounded(encoding, message, maxStrictBodyBytes) : message);
      } catch (error) {
        throw toConnectError(error, { contractCodes: checks.strict });
      }
      pending = pending.subarray(end);
    }
    yield chunk;
  }
  // A body that ends inside a message is refused alike on every protocol (gRPC-Web's own reading says UNIMPLEMENTED).
  if (skip > 0 || pending.byteLength > 0) throw toConnectError(requestUndecodable("the message is shorter than its declared length"), { contractCodes: checks.strict });
}

const headerBytes = 5;
const compressedFlag = 0b1;
