import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, type TextMapGetter } from "@opentelemetry/api";
import { traceCarrier } from "./thread-context.js";
import { activeTracing, traced } from "./tracing.js";

/** What Axon's MCP server knows of one incoming request (the SDK's handler arguments) when it opens its span. */
export interface IncomingMcpRequest {
  /** `tools/call`, `tools/list`. */
  readonly method: string;
  /** The tool a `tools/call` names. */
  readonly tool?: string;
  readonly id: string | number;
  /** The request's `params._meta`. */
  readonly meta?: Readonly<Record<string, unknown>>;
  /** The HTTP request's headers; none on stdio. */
  readonly headers?: Readonly<Record<string, string | string[] | undefined>>;
}

type Carrier = Readonly<Record<string, unknown>>;

const getter: TextMapGetter<Carrier> = {
  get: (carrier, key) => {
    const value = carrier[key];
    return typeof value === "string" || (Array.isArray(value) && value.every((one) => typeof one === "string")) ? (value as string | string[]) : undefined;
  },
  keys: (carrier) => Object.keys(carrier),
};

/**
 * Runs one MCP request as a server span (OpenTelemetry's MCP conventions: `tools/call <tool>`), under the caller's
 * trace: the HTTP headers' when they carry one, else `params._meta`'s (SEP-414), the only carrier stdio has. A tool
 * result with `isError` marks the span `tool_error`.
 */
export function tracedMcpRequest<T>(request: IncomingMcpRequest, work: () => Promise<T>): Promise<T> {
  if (activeTracing() === undefined) return work();
  const carrier = request.headers?.traceparent !== undefined ? request.headers : (request.meta ?? {});
  const parent = propagation.extract(ROOT_CONTEXT, carrier, getter);
  const attributes = {
    "mcp.method.name": request.method,
    "jsonrpc.request.id": String(request.id),
    "network.transport": request.headers === undefined ? "pipe" : "tcp",
    ...(request.tool !== undefined && { "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": request.tool }),
  };
  const name = request.tool === undefined ? request.method : `${request.method} ${request.tool}`;
  return context.with(parent, () =>
    traced(name, SpanKind.SERVER, attributes, work, (span, result) => {
      if ((result as { isError?: unknown } | undefined)?.isError !== true) return;
      span.setAttribute("error.type", "tool_error");
      span.setStatus({ code: SpanStatusCode.ERROR });
    }),
  );
}

/**
 * A request's `_meta` with the active trace added (`traceparent`, `tracestate`, `baggage`, SEP-414), so that an MCP
 * server reached without HTTP headers, or reading only `_meta`, joins the trace; a key the caller set is kept.
 * Undefined when there is nothing to send.
 */
export function withTraceMeta(meta?: Record<string, unknown>): Record<string, unknown> | undefined {
  const carrier = traceCarrier();
  if (carrier === undefined || Object.keys(carrier).length === 0) return meta;
  return { ...carrier, ...meta };
}
