import { context, SpanKind, trace, type Attributes, type Context } from "@opentelemetry/api";
import { carriedContext, traceCarrier } from "./thread-context.js";
import { activeTracing, traced } from "./tracing.js";

/*
 * An operation's life spans calls and replicas: submitted in one call, decided by an operator in another, executed by
 * whichever replica claims it. The submitting call's trace context is stored with the operation, so every later step
 * is a span of the submitter's trace (the operator's own call linked to its decision).
 */

/** What to store with a new operation: the active trace as W3C headers in JSON text, or null when untraced. */
export function traceContextToStore(): string | null {
  const carrier = traceCarrier();
  return carrier?.traceparent === undefined ? null : JSON.stringify(carrier);
}

function storedContext(stored: string | null | undefined): Context | undefined {
  if (!stored) return undefined;
  try {
    return carriedContext(JSON.parse(stored) as Record<string, string>);
  } catch {
    return undefined; // not ours to fail an operation over
  }
}

/** A step of the submission (`submit <operation>`, `policy decision`) in the submitting call's trace. */
export function traceSubmissionStep<T>(name: string, attributes: Attributes, work: () => Promise<T>, describe?: (result: T) => Attributes): Promise<T> {
  return traced(name, SpanKind.INTERNAL, attributes, work, describe && ((span, result) => span.setAttributes(describe(result))));
}

/** What the submit span says of the operation it submitted (or replayed). */
export function submissionAttributes({ operation, created }: { operation: { id: string; state: string }; created: boolean }): Attributes {
  return { "axon.operation.id": operation.id, "axon.operation.state": operation.state, "axon.operation.replayed": !created };
}

/** What an operation's later spans name it by. */
interface TracedOperation {
  readonly id: string;
  readonly operation: string;
  readonly traceContext: string | null;
}

/** A step taken later on the operation (`execute <operation>`, `outcome`), as a span of the submitter's trace. */
export function traceOperationStep<T>(operation: TracedOperation, name: string, attributes: Attributes, work: () => Promise<T>): Promise<T> {
  const parent = activeTracing() && storedContext(operation.traceContext);
  const step = () => traced(name, SpanKind.INTERNAL, { "axon.operation.id": operation.id, "axon.operation.name": operation.operation, ...attributes }, work);
  return parent === undefined ? step() : context.with(parent, step);
}

/** What the outcome span says: the state reached and, for a failure, its code word (never its message). */
export function outcomeAttributes(outcome: { state: string; code?: string }): Attributes {
  return { "axon.operation.state": outcome.state, ...(outcome.code === undefined ? {} : { "error.type": outcome.code }) };
}

/**
 * An operator's decision (approve, deny, revoke) as a span of the trace of the operation it decided, linked to the
 * operator's own call. The operation is known only once decided, so the span is written when the decision is.
 */
export async function traceOperatorDecision<T extends { operation?: TracedOperation & { readonly state: string } }>(action: string, work: () => Promise<T>): Promise<T> {
  const tracing = activeTracing();
  if (tracing === undefined) return work();
  const startTime = Date.now();
  const decided = await work();
  const parent = storedContext(decided.operation?.traceContext);
  if (parent !== undefined) {
    const operatorCall = trace.getSpanContext(context.active());
    const span = tracing.tracer.startSpan(
      "operator decision",
      {
        kind: SpanKind.INTERNAL,
        startTime,
        attributes: { "axon.operation.id": decided.operation!.id, "axon.operation.name": decided.operation!.operation, "axon.decision": action, "axon.operation.state": decided.operation!.state },
        links: operatorCall === undefined ? [] : [{ context: operatorCall }],
      },
      parent,
    );
    span.end();
  }
  return decided;
}
