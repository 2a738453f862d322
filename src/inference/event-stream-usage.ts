import { usageMarker, usageOf, type TokenUsage } from "./token-usage.js";

const lf = Buffer.from("\n\n");
const crlf = Buffer.from("\r\n\r\n");
/** An event longer than this is passed on as it is, unread: usage chunks are small. */
const maxHeldBytes = 1024 * 1024;

/**
 * Reads the usage of a chat completion stream as its bytes pass through, parsing only the event that holds it. Bytes
 * are passed on in whole events (a piece that ends mid-event is held until the event is complete), so that the usage
 * chunk Axon asked for on the client's behalf can be left out whole.
 */
export class EventStreamUsage {
  usage: TokenUsage | undefined;
  private held: Buffer | undefined;

  /** `dropUsageChunk`: the client did not ask for usage; the upstream's usage chunk is read, not passed on. */
  constructor(private readonly dropUsageChunk: boolean) {}

  /** The whole events `piece` completes, to pass on (undefined: nothing yet). */
  push(piece: Buffer): Buffer | undefined {
    const end = Math.max(lastEnd(piece, lf), lastEnd(piece, crlf));
    if (end < 0) {
      this.held = this.held === undefined ? piece : Buffer.concat([this.held, piece]);
      if (this.held.byteLength <= maxHeldBytes) return undefined;
      const long = this.held;
      this.held = undefined;
      return long;
    }
    const complete = this.held === undefined ? (end === piece.byteLength ? piece : piece.subarray(0, end)) : Buffer.concat([this.held, piece.subarray(0, end)]);
    this.held = end === piece.byteLength ? undefined : piece.subarray(end);
    return complete.includes(usageMarker) ? this.readUsage(complete) : complete;
  }

  /** What is left once the upstream has ended: an unterminated last event. */
  end(): Buffer | undefined {
    const rest = this.held;
    this.held = undefined;
    return rest === undefined ? undefined : rest.includes(usageMarker) ? this.readUsage(rest) : rest;
  }

  /** Reads usage from the events that hold it; leaves out the usage-only chunk when the client did not ask for it. */
  private readUsage(events: Buffer): Buffer {
    const kept: string[] = [];
    for (const event of events.toString("utf8").split(/(?<=\r?\n\r?\n)/)) {
      const chunk = event.includes('"prompt_tokens"') ? chunkOf(event) : undefined;
      const usage = usageOf(chunk);
      if (usage !== undefined) this.usage = usage;
      const usageOnly = usage !== undefined && Array.isArray((chunk as { choices?: unknown }).choices) && (chunk as { choices: unknown[] }).choices.length === 0;
      if (!(usageOnly && this.dropUsageChunk)) kept.push(event);
    }
    return Buffer.from(kept.join(""));
  }
}

function lastEnd(piece: Buffer, separator: Buffer): number {
  const at = piece.lastIndexOf(separator);
  return at < 0 ? -1 : at + separator.byteLength;
}

/** The JSON of an event's `data:` lines, joined as the SSE format joins them. */
function chunkOf(event: string): unknown {
  const data = event
    .split(/\r?\n/)
    .filter((line) => line.startsWith("data:"))
    .map((line) => line.slice(line.startsWith("data: ") ? 6 : 5))
    .join("\n");
  try {
    return JSON.parse(data);
  } catch {
    return undefined;
  }
}
