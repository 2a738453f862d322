import diagnosticsChannel from "node:diagnostics_channel";
import { context, propagation } from "@opentelemetry/api";

/** What undici (Node's fetch) publishes as a request is created: headers may still be added. */
interface UndiciRequestCreated {
  request: { addHeader(name: string, value: string): unknown };
}

/**
 * Every outgoing fetch carries the active trace (`traceparent`, `tracestate`, `baggage`): the LLM providers' SDKs,
 * external agents, MCP servers over HTTP and `http.request` upstreams all call through it, so the callee's spans join
 * the caller's trace without each client knowing of tracing. Returns what stops it.
 */
export function propagateOnFetch(): () => void {
  const onCreated = (message: unknown): void => {
    const { request } = message as UndiciRequestCreated;
    propagation.inject(context.active(), request, { set: (carrier, name, value) => void carrier.addHeader(name, value) });
  };
  diagnosticsChannel.subscribe("undici:request:create", onCreated);
  return () => diagnosticsChannel.unsubscribe("undici:request:create", onCreated);
}
