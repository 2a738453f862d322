import { SpanStatusCode, type Attributes, type Span, type SpanKind, type Tracer } from "@opentelemetry/api";
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

/** Runs `work` as the active span named so; its failure marks the span with the error's type and is rethrown. */
export function traced<T>(name: string, kind: SpanKind, attributes: Attributes, work: () => Promise<T>, describe?: (span: Span, result: T) => void): Promise<T> {
  const tracing = activeTracing();
  if (tracing === undefined) return work();
  return tracing.tracer.startActiveSpan(name, { kind, attributes }, async (span) => {
    try {
      const result = await work();
      describe?.(span, result);
      return result;
    } catch (error) {
      span.setAttribute("error.type", errorType(error));
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw error;
    } finally {
      span.end();
    }
  });
}

/** An error's kind, never its message: an AxonError's reason, a provider's status, else the class name. */
export function errorType(error: unknown): string {
  const { reason, status, name } = (error ?? {}) as { reason?: unknown; status?: unknown; name?: unknown };
  if (typeof reason === "string") return reason;
  if (typeof status === "string" || typeof status === "number") return String(status);
  return typeof name === "string" ? name : "_OTHER";
}
