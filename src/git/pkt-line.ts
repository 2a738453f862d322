/**
 * Git's pkt-line framing (gitprotocol-common): four hex digits giving the length of the line including themselves,
 * then the payload. `0000` is a flush, `0001` a delimiter and `0002` a response end (protocol v2).
 */

/** The largest pkt-line, length digits included. */
export const MAX_PKT_LINE = 65520;

export const FLUSH = Buffer.from("0000", "latin1");

export type PktLine = { kind: "data"; payload: Buffer } | { kind: "flush" | "delim" | "response-end" };

/** One pkt-line carrying `payload` (a string is sent as UTF-8). */
export function pktLine(payload: string | Uint8Array): Buffer {
  const body = typeof payload === "string" ? Buffer.from(payload, "utf8") : Buffer.from(payload);
  if (body.length + 4 > MAX_PKT_LINE) throw new RangeError(`a pkt-line carries at most ${MAX_PKT_LINE - 4} bytes`);
  return Buffer.concat([Buffer.from((body.length + 4).toString(16).padStart(4, "0"), "latin1"), body]);
}

/** Sideband channels (gitprotocol-pack): 1 carries the data, 2 progress for the terminal, 3 a fatal error. */
export type SidebandChannel = 1 | 2 | 3;

/** `payload` on a sideband channel, split into as many pkt-lines as its size needs. */
export function sidebandLines(channel: SidebandChannel, payload: string | Uint8Array, maxPacket = MAX_PKT_LINE): Buffer {
  const body = typeof payload === "string" ? Buffer.from(payload, "utf8") : Buffer.from(payload);
  const room = maxPacket - 5;
  const lines: Buffer[] = [];
  for (let start = 0; start < body.length; start += room) {
    lines.push(pktLine(Buffer.concat([Buffer.of(channel), body.subarray(start, start + room)])));
  }
  return Buffer.concat(lines);
}

/** A malformed pkt-line stream. */
export class PktLineError extends Error {
  override readonly name = "PktLineError";
}

/**
 * Reads pkt-lines from bytes that arrive in pieces: `push` adds bytes, `next` returns the next whole line, or
 * undefined until more bytes arrive. `rest` hands back what follows the last line read (a pack, say).
 */
export class PktLineReader {
  private buffered: Buffer = Buffer.alloc(0);

  push(bytes: Uint8Array): void {
    this.buffered = this.buffered.length === 0 ? Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) : Buffer.concat([this.buffered, bytes]);
  }

  next(): PktLine | undefined {
    if (this.buffered.length < 4) return undefined;
    const digits = this.buffered.toString("latin1", 0, 4);
    if (!/^[0-9a-f]{4}$/i.test(digits)) throw new PktLineError("a pkt-line length must be four hex digits");
    const length = Number.parseInt(digits, 16);
    if (length < 4) {
      this.buffered = this.buffered.subarray(4);
      return { kind: length === 0 ? "flush" : length === 1 ? "delim" : length === 2 ? "response-end" : invalidLength() };
    }
    if (length > MAX_PKT_LINE) throw new PktLineError(`a pkt-line is at most ${MAX_PKT_LINE} bytes`);
    if (this.buffered.length < length) return undefined;
    const payload = this.buffered.subarray(4, length);
    this.buffered = this.buffered.subarray(length);
    return { kind: "data", payload };
  }

  /** The bytes after the last line read; the reader is empty afterwards. */
  rest(): Buffer {
    const rest = this.buffered;
    this.buffered = Buffer.alloc(0);
    return rest;
  }
}

function invalidLength(): never {
  throw new PktLineError("pkt-line length 0003 is not defined");
}

/** A pkt-line payload as text without its trailing newline (Git may or may not send one). */
export function lineText(payload: Buffer): string {
  const end = payload.length > 0 && payload[payload.length - 1] === 0x0a ? payload.length - 1 : payload.length;
  return payload.toString("utf8", 0, end);
}
