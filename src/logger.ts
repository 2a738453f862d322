import { pino, type DestinationStream, type Logger } from "pino";

export type { Logger };

/** The one logger: JSON lines (stdout unless told otherwise). Calls log one access line each, with their request id. */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino({ level, base: { service: "axon" }, timestamp: isoTime }, destination);
}

// pino's isoTime formats a Date for every line; lines written within the same millisecond share one.
let formattedAt = 0;
let formatted = "";
function isoTime(): string {
  const now = Date.now();
  if (now !== formattedAt) {
    formattedAt = now;
    formatted = `,"time":"${new Date(now).toISOString()}"`;
  }
  return formatted;
}
