import { Code, ConnectError } from "@connectrpc/connect";
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

  /**
   * The message, once the request has ended: exactly one, complete, decompressed. No message or a second one is
   * UNIMPLEMENTED and a compressed one without an encoding INTERNAL, as connect-es and gRPC's own servers answer.
   * A promise only for a message that must be inflated.
   */
  message(): Uint8Array | Promise<Uint8Array> {
    const bytes = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    if (bytes.byteLength === 0) throw new ConnectError("a unary request carries exactly one message: it has none", Code.Unimplemented);
    if (bytes.byteLength < prefixBytes) throw requestUndecodable("the message is shorter than its declared length");
    const length = bytes.readUInt32BE(1);
    if (bytes.byteLength < prefixBytes + length) throw requestUndecodable("the message is shorter than its declared length");
    if (bytes.byteLength > prefixBytes + length) throw new ConnectError("a unary request carries exactly one message: it has more", Code.Unimplemented);
    const payload = bytes.subarray(prefixBytes);
    if ((bytes[0]! & compressedFlag) === 0) return payload;
    if (this.encoding !== "gzip") throw new ConnectError("a message flagged compressed needs a grpc-encoding", Code.Internal);
    return inflateBounded("gzip", payload, this.maxBytes);
  }

  private declaredLength(): number {
    const first = this.chunks[0]!;
    return (first.byteLength >= prefixBytes ? first : Buffer.concat(this.chunks)).readUInt32BE(1);
  }
}
