import { context, propagation, ROOT_CONTEXT } from "@opentelemetry/api";
import { activeTracing } from "./tracing.js";

/** The active trace as W3C headers, to hand to another thread with the work it is to do; undefined untraced. */
export function traceCarrier(): Record<string, string> | undefined {
  if (activeTracing() === undefined) return undefined;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier;
}

/** Runs `work` under the trace another thread handed over with it (as is when there is none or tracing is off). */
export function runInCarriedTrace<T>(carrier: Record<string, string> | undefined, work: () => T): T {
  if (carrier === undefined || activeTracing() === undefined) return work();
  return context.with(propagation.extract(ROOT_CONTEXT, carrier), work);
}
