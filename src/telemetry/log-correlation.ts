import { context, trace } from "@opentelemetry/api";

const none = {};

/** pino's mixin: a line written inside a traced call names its trace and span, so a log search leads to the trace. */
export function traceFields(): { trace_id?: string; span_id?: string } {
  const span = trace.getSpan(context.active());
  if (span === undefined) return none;
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}
