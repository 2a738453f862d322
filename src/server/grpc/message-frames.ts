import { inflateBounded } from "../compression.js";
import { requestTooLarge, requestUndecodable } from "../request-body.js";

/** A gRPC message on the wire: a flags byte (bit 0: compressed), its length (4 bytes, big-endian), its bytes. */
const prefixBytes = 5;
const compressedFlag = 0b1;

/** One message, framed (`compressed` when its bytes are already gzipped). */
export function frameMessage(payload: Uint8Array, compressed: boolean): Buffer {
  const frame = Buffer.allocUnsafe(prefixBytes + payload.byteLength);
  frame[0] = compressed ? compressedFlag : 0;
  frame.writeUInt32BE(payload.byteLength, 1);
  frame.set(payload, prefixBytes);
  return frame;
}

/**
 * Collects the one message of a unary request as its DATA frames arrive. A message declared larger than the limit is
 * refused as soon as its prefix is in, before its bytes are buffered.
 */
export class UnaryMessageReader {
  private readonly chunks: Buffer[] = [];
  private received = 0;

  constructor(
    private readonly maxBytes: number,
    /** The request's grpc-encoding: a compressed message must say how. */
    private readonly encoding: "identity" | "gzip",
  ) {}

  /** Takes the next chunk; throws once the request cannot be a message within the limit. */
  push(chunk: Buffer): void {
    this.received += chunk.byteLength;
    this.chunks.push(chunk);
    if (this.received >= prefixBytes && this.declaredLength() > this.maxBytes) throw requestTooLarge(this.maxBytes);
    if (this.received > prefixBytes + this.maxBytes) throw requestTooLarge(this.maxBytes);
  }

  /** The message, once the request has ended: exactly one, complete, decompressed. */
  async message(): Promise<Uint8Array> {
    const bytes = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    if (bytes.byteLength < prefixBytes) throw requestUndecodable("a unary request carries exactly one message");
    const length = bytes.readUInt32BE(1);
    if (bytes.byteLength !== prefixBytes + length) {
      throw requestUndecodable(bytes.byteLength < prefixBytes + length ? "the message is shorter than its declared length" : "a unary request carries exactly one message");
    }
    const payload = bytes.subarray(prefixBytes);
    if ((bytes[0]! & compressedFlag) === 0) return payload;
    if (this.encoding !== "gzip") throw requestUndecodable("a compressed message needs a grpc-encoding");
    return inflateBounded("gzip", payload, this.maxBytes);
  }

  private declaredLength(): number {
    const first = this.chunks[0]!;
    return (first.byteLength >= prefixBytes ? first : Buffer.concat(this.chunks)).readUInt32BE(1);
  }
}
