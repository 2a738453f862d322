import { pino, type DestinationStream, type Logger } from "pino";
import { traceFields } from "./telemetry/log-correlation.js";
import { tracingRequested } from "./telemetry/settings.js";

export type { Logger };

/**
 * The one logger: JSON lines (stdout unless told otherwise). Calls log one access line each, with their request id;
 * with tracing configured, every line written inside a traced call also carries its trace_id and span_id.
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  const mixin = tracingRequested(process.env) ? { mixin: traceFields } : {};
  return pino({ level, base: { service: "axon" }, timestamp: isoTime, ...mixin }, destination);
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
