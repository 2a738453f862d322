import { create, isMessage, type DescMessage, type DescMethod, type DescService, type Message } from "@bufbuild/protobuf";
import { Code, ConnectError, type ContextValues, type HandlerContext, type MethodImplSpec } from "@connectrpc/connect";
import { toHeaders, urlOf, type RequestHeaders } from "../http-request.js";
import type { Call } from "./call-pipeline.js";

export interface DirectCallInit {
  /** The call as the pipeline opened it (and did not refuse). */
  readonly call: Call;
  readonly spec: MethodImplSpec;
  readonly protocolName: string;
  readonly requestMethod: string;
  readonly headers: RequestHeaders;
  readonly path: string;
  /** From `grpc-timeout` or `connect-timeout-ms`; past it the call is DEADLINE_EXCEEDED. */
  readonly timeoutMs: number | undefined;
  /** Aborted once the shutdown grace has run out. */
  readonly shutdownSignal: AbortSignal;
  /** Writes the call's failure in the transport's framing; called at most once, and never after a success. */
  readonly answerError: (status: ConnectError) => void;
}

/**
 * A call a transport hands straight to the service implementation, without connect-node's handler pipeline: the
 * implementation's HandlerContext, and the call's one outcome. Each part of the context costs only when used (the
 * AbortSignal, the header objects and the URL are made on first access), so `List` pays for none of them while a long
 * poll still gets a signal that aborts on cancel, deadline and shutdown. An abort answers the failure at once, so a
 * deadline is met even by an implementation that ignores its signal.
 */
export class DirectCall implements HandlerContext {
  readonly method: DescMethod;
  readonly service: DescService;
  readonly values: ContextValues;
  readonly protocolName: string;
  readonly requestMethod: string;
  private controller: AbortController | undefined;
  private reason: ConnectError | undefined;
  private answered = false;
  private ended = false;
  private readonly deadline: number | undefined;
  private readonly deadlineTimer: NodeJS.Timeout | undefined;
  private requestHeaders: Headers | undefined;
  private responseHeaders: Headers | undefined;
  private responseTrailers: Headers | undefined;
  /** Listens to the shutdown signal once the implementation has asked for its own signal. */
  private shutdownListener: (() => void) | undefined;

  constructor(private readonly init: DirectCallInit) {
    this.method = init.spec.method;
    this.service = init.spec.method.parent;
    this.values = init.call.values;
    this.protocolName = init.protocolName;
    this.requestMethod = init.requestMethod;
    if (init.timeoutMs !== undefined) {
      this.deadline = performance.now() + init.timeoutMs;
      this.deadlineTimer = setTimeout(() => this.abort(new ConnectError("the deadline passed", Code.DeadlineExceeded)), init.timeoutMs);
    }
  }

  get signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.reason !== undefined) this.controller.abort(this.reason);
      else if (this.init.shutdownSignal.aborted) this.onShutdown();
      else if (!this.ended) this.init.shutdownSignal.addEventListener("abort", (this.shutdownListener = () => this.onShutdown()));
    }
    return this.controller.signal;
  }

  get url(): string {
    return urlOf(this.init.path);
  }

  timeoutMs(): number | undefined {
    return this.deadline === undefined ? undefined : this.deadline - performance.now();
  }

  get requestHeader(): Headers {
    return (this.requestHeaders ??= toHeaders(this.init.headers));
  }

  get responseHeader(): Headers {
    return (this.responseHeaders ??= new Headers());
  }

  get responseTrailer(): Headers {
    return (this.responseTrailers ??= new Headers());
  }

  /** What the implementation set, if it set anything: the transport sends these. */
  get sentHeaders(): { header: Headers | undefined; trailer: Headers | undefined } {
    return { header: this.responseHeaders, trailer: this.responseTrailers };
  }

  /** Whether the call has its outcome (answered, failed or aborted): nothing more is written for it. */
  get isAnswered(): boolean {
    return this.answered;
  }

  /** Runs a unary implementation: its answer at once when it gives one at once (List), else a promise of it. */
  unary(request: Message): Message | Promise<Message> {
    const { impl, method } = this.init.spec as Extract<MethodImplSpec, { kind: "unary" }>;
    const output = this.init.call.run(() => impl(request, this));
    return output instanceof Promise ? output.then((value) => normalize(method.output, value)) : normalize(method.output, output);
  }

  /** Runs a server-streaming implementation; the stream ends with the abort reason once the call is aborted. */
  async *serverStream(request: Message): AsyncIterable<Message> {
    const { impl, method } = this.init.spec as Extract<MethodImplSpec, { kind: "server_streaming" }>;
    for await (const output of this.init.call.bind(impl(request, this))) {
      if (this.reason !== undefined) throw this.reason;
      yield normalize(method.output, output);
    }
    if (this.reason !== undefined) throw this.reason;
  }

  /** The call succeeded: true, once, when its answer may go out (it is counted and logged as OK now). */
  succeed(): boolean {
    if (this.answered) return false;
    this.answered = true;
    this.init.call.finish();
    this.end();
    return true;
  }

  /** The call failed: counted and logged once, and its google.rpc.Status answered unless an outcome went out before. */
  fail(error: unknown): void {
    const status = this.init.call.finish(error) ?? new ConnectError("internal error", Code.Internal);
    this.end();
    if (this.answered) return;
    this.answered = true;
    this.init.answerError(status);
  }

  /** Ends the call from outside (the client went away, the deadline passed, the server is shutting down). */
  abort(reason: ConnectError): void {
    if (this.reason !== undefined || this.answered) return;
    this.reason = reason;
    this.controller?.abort(reason);
    this.fail(reason);
  }

  private onShutdown(): void {
    const reason: unknown = this.init.shutdownSignal.reason;
    this.abort(reason instanceof ConnectError ? reason : new ConnectError("server shutting down", Code.Unavailable));
  }

  // No timer or listener outlives the call's outcome.
  private end(): void {
    if (this.ended) return;
    this.ended = true;
    clearTimeout(this.deadlineTimer);
    if (this.shutdownListener !== undefined) this.init.shutdownSignal.removeEventListener("abort", this.shutdownListener);
  }
}

// Implementations may answer a message or its init shape, as connect-es allows.
function normalize(output: DescMessage, value: unknown): Message {
  return isMessage(value, output) ? value : create(output, value as never);
}
