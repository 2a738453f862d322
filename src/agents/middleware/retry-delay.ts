import type { JsonObject } from "@bufbuild/protobuf";
import { boolean, integer, number, type ArgumentRule } from "./middleware-args.js";

/** The backoff arguments LangChain's ModelRetryMiddleware and ToolRetryMiddleware share (seconds, as in Python). */
export const backoffArgs: Record<string, ArgumentRule> = {
  max_retries: integer(0),
  backoff_factor: number(0),
  initial_delay: number(0),
  max_delay: number(0),
  jitter: boolean,
};

export interface Backoff {
  maxRetries: number;
  /** Milliseconds before retry number `retry` (0 for the first). */
  delayMs(retry: number): number;
}

export function backoffOf(args: JsonObject): Backoff {
  const maxRetries = (args["max_retries"] as number | undefined) ?? 2;
  const factor = (args["backoff_factor"] as number | undefined) ?? 2;
  const initial = (args["initial_delay"] as number | undefined) ?? 1;
  const max = (args["max_delay"] as number | undefined) ?? 60;
  const jitter = (args["jitter"] as boolean | undefined) ?? true;
  return {
    maxRetries,
    delayMs(retry) {
      const seconds = Math.min(initial * factor ** retry, max);
      // ±25%, so that many clients failing together do not retry together.
      return 1000 * (jitter ? seconds * (0.75 + Math.random() / 2) : seconds);
    },
  };
}

/** Waits `ms`, or rejects with the signal's reason once it aborts. */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const done = () => {
      clearTimeout(timer);
      reject(signal.reason as Error);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", done);
      resolve();
    }, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

/** An error's name and message, as a retry middleware tells the model about it. */
export function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
