import { context, propagation, ROOT_CONTEXT, type Context } from "@opentelemetry/api";
import { activeTracing } from "./tracing.js";

/** The active trace as W3C headers, to hand to another thread (or store) with the work it is about; undefined untraced. */
export function traceCarrier(): Record<string, string> | undefined {
  if (activeTracing() === undefined) return undefined;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier;
}

/** Runs `work` under the trace another thread handed over with it (as is when there is none or tracing is off). */
export function runInCarriedTrace<T>(carrier: Record<string, string> | undefined, work: () => T): T {
  if (carrier === undefined || activeTracing() === undefined) return work();
  return context.with(carriedContext(carrier), work);
}

/** The context W3C headers describe. */
export function carriedContext(carrier: Record<string, string>): Context {
  return propagation.extract(ROOT_CONTEXT, carrier);
}
