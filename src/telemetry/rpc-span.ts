import type { DescMethod } from "@bufbuild/protobuf";
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Span, type TextMapGetter } from "@opentelemetry/api";
import { activeTracing } from "./tracing.js";

/** What a transport knows of an incoming call when it opens its span. */
export interface IncomingRpc {
  readonly method: DescMethod;
  readonly protocol: "grpc" | "grpc-web" | "connect" | "rest";
  header(name: string): string | undefined;
  /** For REST: the HTTP verb and the route template the request matched. */
  readonly http?: { readonly method: string; readonly route: string };
}

const headerGetter: TextMapGetter<IncomingRpc> = {
  get: (carrier, name) => carrier.header(name),
  keys: () => ["traceparent", "tracestate", "baggage"],
};

// gRPC's server-side error codes (the semantic conventions): the rest are the client's doing, not the server's fault.
const serverErrorCodes = new Set([2, 4, 12, 13, 14, 15]);
const codeNames = ["OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
  "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
  "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"];

/** The server span of one RPC, under the caller's trace when its headers carry one. */
export class RpcSpan {
  private constructor(
    private readonly span: Span,
    /** The context the implementation runs in: everything it starts is this span's child. */
    readonly context: Context,
    private readonly rest: boolean,
  ) {}

  /** Opens the span when tracing is on; undefined (and nothing read) when it is off. */
  static start(rpc: IncomingRpc): RpcSpan | undefined {
    const tracing = activeTracing();
    if (tracing === undefined) return undefined;
    const parent = propagation.extract(ROOT_CONTEXT, rpc, headerGetter);
    const service = rpc.method.parent.typeName;
    const span = tracing.tracer.startSpan(
      `${service}/${rpc.method.name}`,
      {
        kind: SpanKind.SERVER,
        attributes: {
          "rpc.system": rpc.protocol === "connect" ? "connect_rpc" : "grpc",
          "rpc.service": service,
          "rpc.method": rpc.method.name,
          "axon.protocol": rpc.protocol,
          ...(rpc.http && { "http.request.method": rpc.http.method, "http.route": rpc.http.route }),
        },
      },
      parent,
    );
    return new RpcSpan(span, trace.setSpan(parent, span), rpc.http !== undefined);
  }

  /** Runs `work` (and what it awaits) inside the span. */
  run<T>(work: () => T): T {
    return context.with(this.context, work);
  }

  /** A stream whose every step runs inside the span: an async generator's body runs in the context of its reader. */
  bind<T>(stream: AsyncIterable<T>): AsyncIterable<T> {
    const spanContext = this.context;
    return {
      [Symbol.asyncIterator]() {
        const iterator = stream[Symbol.asyncIterator]();
        return {
          next: () => context.with(spanContext, () => iterator.next()),
          return: (value?: unknown) => context.with(spanContext, () => iterator.return?.(value) ?? Promise.resolve({ done: true as const, value: undefined as T })),
          throw: (error?: unknown) => context.with(spanContext, () => iterator.throw?.(error) ?? Promise.reject(error)),
        };
      },
    };
  }

  /** Ends the span with the call's gRPC code (and, for REST, the HTTP status it answered). */
  end(code: number, httpStatus: number | undefined): void {
    const name = codeNames[code] ?? String(code);
    this.span.setAttribute("rpc.grpc.status_code", code);
    if (this.rest && httpStatus !== undefined) this.span.setAttribute("http.response.status_code", httpStatus);
    if (serverErrorCodes.has(code)) {
      this.span.setAttribute("error.type", name);
      this.span.setStatus({ code: SpanStatusCode.ERROR, message: name });
    }
    this.span.end();
  }
}
