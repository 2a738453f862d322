import { create, isMessage, type DescMessage, type DescMethod, type DescService, type Message } from "@bufbuild/protobuf";
import { Code, ConnectError, type ContextValues, type HandlerContext, type MethodImplSpec } from "@connectrpc/connect";

export interface DirectCallInit {
  readonly spec: MethodImplSpec;
  readonly values: ContextValues;
  readonly protocolName: string;
  readonly requestMethod: string;
  /** Built only if the implementation asks for it. */
  readonly url: () => string;
  readonly requestHeader: () => Headers;
  /** From `grpc-timeout` or `connect-timeout-ms`; past it the call is DEADLINE_EXCEEDED. */
  readonly timeoutMs: number | undefined;
  /** Aborted once the shutdown grace has run out. */
  readonly shutdownSignal: AbortSignal;
  /** Called once if the call is aborted (client gone, deadline, shutdown): the transport answers or gives up. */
  readonly onAbort: (reason: ConnectError) => void;
}

/**
 * A call a transport hands straight to the service implementation, without connect-node's handler pipeline. It is the
 * implementation's HandlerContext, and each part of that costs only when used: the AbortSignal, the header objects and
 * the URL are made on first access, so `List` pays for none of them while a long poll still gets a signal that aborts
 * on cancel, deadline and shutdown. The transport learns of an abort through `onAbort` and answers then, so a deadline is
 * met even by an implementation that ignores its signal; it calls `end` once it has answered.
 */
export class DirectCall implements HandlerContext {
  readonly method: DescMethod;
  readonly service: DescService;
  readonly values: ContextValues;
  readonly protocolName: string;
  readonly requestMethod: string;
  private controller: AbortController | undefined;
  private reason: ConnectError | undefined;
  private ended = false;
  private readonly deadline: number | undefined;
  private readonly deadlineTimer: NodeJS.Timeout | undefined;
  private requestHeaders: Headers | undefined;
  private responseHeaders: Headers | undefined;
  private responseTrailers: Headers | undefined;

  constructor(private readonly init: DirectCallInit) {
    this.method = init.spec.method;
    this.service = init.spec.method.parent;
    this.values = init.values;
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
      else if (!this.ended) this.init.shutdownSignal.addEventListener("abort", this.onShutdown);
    }
    return this.controller.signal;
  }

  get url(): string {
    return this.init.url();
  }

  timeoutMs = (): number | undefined => (this.deadline === undefined ? undefined : this.deadline - performance.now());

  get requestHeader(): Headers {
    return (this.requestHeaders ??= this.init.requestHeader());
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

  /** The error a cancelled call ended with (client gone, deadline, shutdown), if it was. */
  get abortReason(): ConnectError | undefined {
    return this.reason;
  }

  /** Ends the call from outside: the client went away, the deadline passed, the server is shutting down. */
  abort(reason: ConnectError): void {
    if (this.reason !== undefined || this.ended) return;
    this.reason = reason;
    this.controller?.abort(reason);
    this.init.onAbort(reason);
  }

  /** Runs a unary implementation. */
  async unary(request: Message): Promise<Message> {
    const { impl, method } = this.init.spec as Extract<MethodImplSpec, { kind: "unary" }>;
    return normalize(method.output, await impl(request, this));
  }

  /** Runs a server-streaming implementation; the stream ends with the abort reason once the call is aborted. */
  async *serverStream(request: Message): AsyncIterable<Message> {
    const { impl, method } = this.init.spec as Extract<MethodImplSpec, { kind: "server_streaming" }>;
    for await (const output of impl(request, this)) {
      if (this.reason !== undefined) throw this.reason;
      yield normalize(method.output, output);
    }
    if (this.reason !== undefined) throw this.reason;
  }

  /** The transport has answered: no more aborts, no timer, no listener left behind. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    clearTimeout(this.deadlineTimer);
    this.init.shutdownSignal.removeEventListener("abort", this.onShutdown);
  }

  private readonly onShutdown = (): void => {
    const reason: unknown = this.init.shutdownSignal.reason;
    this.abort(reason instanceof ConnectError ? reason : new ConnectError("server shutting down", Code.Unavailable));
  };
}

// Implementations may answer a message or its init shape, as connect-es allows.
function normalize(output: DescMessage, value: unknown): Message {
  return isMessage(value, output) ? value : create(output, value as never);
}
