import type { Tracer } from "@opentelemetry/api";
import type { TracingSettings } from "./settings.js";

/** Tracing as the SDK started it in this thread. */
export interface ActiveTracing {
  readonly tracer: Tracer;
  readonly settings: TracingSettings;
  /** Exports what is batched now. */
  flush(): Promise<void>;
}

let active: ActiveTracing | undefined;

/**
 * The tracer, once the SDK has started in this thread; undefined when no endpoint is configured, which is what every
 * hook checks first, so an untraced call pays one comparison and nothing of the API.
 */
export function activeTracing(): ActiveTracing | undefined {
  return active;
}

/** Sends the spans batched so far: a thread that may be ended at any moment does so after each chat. */
export async function flushTraces(): Promise<void> {
  await active?.flush();
}

export function setActiveTracing(tracing: ActiveTracing | undefined): void {
  active = tracing;
}
