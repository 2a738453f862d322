import { appendFileSync, writeSync } from "node:fs";
import { pino, type DestinationStream, type Logger } from "pino";
import { traceFields } from "./telemetry/log-correlation.js";
import { tracingRequested } from "./telemetry/settings.js";

export type { Logger };

/**
 * The one logger: JSON lines (stdout unless told otherwise). Calls log one access line each, with their request id;
 * with tracing configured, every line written inside a traced call also carries its trace_id and span_id.
 */
export function createLogger(level: string, destination: DestinationStream = (stdoutLines ??= batchedLines(1))): Logger {
  const mixin = tracingRequested(process.env) ? { mixin: traceFields } : {};
  return pino({ level, base: { service: "axon" }, timestamp: isoTime, ...mixin }, destination);
}

let stdoutLines: DestinationStream | undefined;

/** Writes the access line of one call that succeeded: its request id and how long it took. */
export type SuccessLine = (requestId: string, ms: number) => void;

/**
 * The access line of a successful call on one route and protocol, exactly as
 * `logger.info({ request_id, route, protocol, code: "OK", ms }, "request")` writes it, but filled into a template made
 * once: it is the one line every call writes, and pino's general serializer took about 2 µs of it. A logger that mixes
 * fields in (trace ids) writes it through pino.
 */
export function successLine(logger: Logger, route: string, protocol: string): SuccessLine {
  const internals = logger as unknown as Record<symbol, unknown>;
  if (internals[pino.symbols.mixinSym] !== undefined) {
    return (requestId, ms) => logger.info({ request_id: requestId, route, protocol, code: "OK", ms }, "request");
  }
  const stream = internals[pino.symbols.streamSym] as DestinationStream;
  const time = internals[pino.symbols.timeSym] as () => string;
  const head = `{"level":${logger.levels.values.info}`;
  const bindings = internals[pino.symbols.chindingsSym] as string;
  const middle = `,"route":${JSON.stringify(route)},"protocol":${JSON.stringify(protocol)},"code":"OK","ms":`;
  return (requestId, ms) => {
    if (logger.isLevelEnabled("info")) stream.write(`${head}${time()}${bindings},"request_id":${jsonString(requestId)}${middle}${ms},"msg":"request"}\n`);
  };
}

// Escaped by JSON: quotes, backslashes, control characters. A request id from a header may hold a quote or a tab.
const escapedInJson = /["\\\u0000-\u001f]/;

/** A string as JSON, quoted without JSON.stringify (its set-up is most of its cost on a short id) when nothing needs escaping. */
function jsonString(text: string): string {
  return escapedInJson.test(text) ? JSON.stringify(text) : `"${text}"`;
}

/**
 * A file (standard output by default) written in batches: a line goes out at most 10 ms after it was logged (or at
 * once when 64 KiB are waiting), so under load the access lines of many calls cost one write. pino's default makes a
 * write of each line as it comes, through libuv's thread pool: about 25 µs of CPU a write (`/dev/null`, this
 * machine), a cost a server with one line a call pays on every call. A reader that falls behind is waited for without
 * holding the server up (sonic-boom retries a full pipe later).
 */
export function batchedLines(dest: number | string): DestinationStream {
  let lines: string[] = [];
  let waiting = 0;
  let timer: NodeJS.Timeout | undefined;
  const flush = (): void => {
    clearTimeout(timer);
    timer = undefined;
    if (lines.length === 0) return;
    file.write(lines.join(""));
    lines = [];
    waiting = 0;
  };
  // A process that exits (process.exit, or a throw) before a batch is due writes it synchronously, after what the file
  // already holds: an asynchronous write would not finish. One that ends by itself waits for the batch's timer.
  process.once("exit", () => {
    if (lines.length === 0) return;
    try {
      file.flushSync();
      if (typeof dest === "number") writeSync(dest, lines.join(""));
      else appendFileSync(dest, lines.join(""));
    } catch {
      // Nowhere left to write.
    }
  });
  const file = pino.destination({ dest, sync: false });
  return {
    write(line: string) {
      lines.push(line);
      waiting += line.length;
      if (waiting >= 64 * 1024) flush();
      else timer ??= setTimeout(flush, 10);
    },
  };
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
