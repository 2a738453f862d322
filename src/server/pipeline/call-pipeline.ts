import { randomUUID } from "node:crypto";
import type { DescMethod } from "@bufbuild/protobuf";
import { Code, type ConnectError, type ContextKey, type ContextValues } from "@connectrpc/connect";
import { successLine, type Logger, type SuccessLine } from "../../logger.js";
import type { Principal } from "../../auth/principals.js";
import type { Credentials, ServiceAuthenticator } from "../authenticate.js";
import { certificateNamesOf } from "../client-certificate.js";
import type { BodyTally, ClosingRequest, IntakeBudget } from "../intake-budget.js";
import { RpcSpan } from "../../telemetry/rpc-span.js";
import { httpStatusKey, pathAgentNameKey, principalKey, protocolKey, requestIdKey, requestMetadataKey, type Protocol } from "../context.js";
import { okCode, type Metrics, type RouteMetrics } from "../metrics.js";
import { errorInfoOf, httpStatusOf, isExpected, toConnectError, type MapOptions } from "../status.js";
import { isStrictService, strictResponseHeaders } from "../strict/contract.js";

/** What a transport knows of a call once its headers have arrived, before any of its body. */
export interface CallStart {
  readonly method: DescMethod;
  readonly protocol: Protocol;
  /** A request header by its lower-case name (metadata, the bearer and the request id travel in headers everywhere). */
  header(name: string): string | undefined;
  /** The agent named by neuro-san's legacy method path `/<agent>.AgentService/<Method>`. */
  readonly pathAgentName?: string | undefined;
  /** The context values to fill: connect-node's own on its routes, fresh ones otherwise. */
  readonly values?: ContextValues;
  /** For REST: the HTTP verb and the route template the request matched (the trace's http.route). */
  readonly http?: { readonly method: string; readonly route: string };
  /** The connection's socket as the transport holds it (for the name in a verified client certificate). */
  readonly socket?: unknown;
}

export interface CallPipelineOptions {
  logger: Logger;
  metrics: Metrics;
  authenticate: ServiceAuthenticator;
  /** AGENT_FORWARDED_REQUEST_METADATA: headers copied into the call's metadata. */
  forwardedMetadata: readonly string[];
  /** Where the bodies of unauthenticated calls are counted while they are read. */
  intake: IntakeBudget;
}

/**
 * The one pipeline every RPC meets, whatever carried it (gRPC, Connect, gRPC-Web, REST): it names the call (request id,
 * forwarded metadata), authenticates it, meters an unauthenticated call's body, and when it ends maps its error to
 * google.rpc.Status, counts it and writes its one log line. Transports only frame: they call `begin` as soon as the
 * headers are in, `bodyTally` before they read the body, and `finish` once.
 */
export class CallPipeline {
  private readonly routes = new Map<DescMethod, Map<Protocol, BoundRoute>>();
  // A forwarded `request_id` may also arrive as `request-id`: headers with underscores get dropped by some proxies.
  private readonly forwarded: readonly (readonly [name: string, alternative: string])[];

  constructor(private readonly options: CallPipelineOptions) {
    this.forwarded = options.forwardedMetadata.map((name) => [name, name.replaceAll("_", "-")] as const);
  }

  /**
   * Opens a call from its headers alone, so that nothing of a refused call's body need ever be read. A refused call
   * comes back finished (counted and logged) with its `refusal` to answer. The call comes back at once, unless a bearer
   * JWT's signature must be checked first (WebCrypto): then a promise of it.
   */
  begin(start: CallStart): Call | Promise<Call> {
    const values = start.values ?? new CallValues();
    values.set(protocolKey, start.protocol);
    if (start.pathAgentName !== undefined) values.set(pathAgentNameKey, start.pathAgentName);
    const metadata: Record<string, string> = {};
    for (const [name, alternative] of this.forwarded) {
      const value = start.header(name) ?? start.header(alternative);
      if (value) metadata[name] = value;
    }
    const requestId = metadata.request_id ?? start.header("x-request-id") ?? newRequestId();
    metadata.request_id = requestId;
    values.set(requestIdKey, requestId);
    values.set(requestMetadataKey, metadata);

    const call = new Call(this.options.logger, this.bound(start.method, start.protocol), start.protocol, requestId, values, this.options.intake, RpcSpan.start(start));
    try {
      const found = this.options.authenticate(start.method.parent, new PresentedCredentials(start));
      return found instanceof Promise ? found.then((principal) => call.admit(principal), (error: unknown) => call.refuse(error)) : call.admit(found);
    } catch (error) {
      return call.refuse(error);
    }
  }

  private bound(method: DescMethod, protocol: Protocol): BoundRoute {
    let byProtocol = this.routes.get(method);
    if (byProtocol === undefined) {
      byProtocol = new Map();
      this.routes.set(method, byProtocol);
    }
    let bound = byProtocol.get(protocol);
    if (bound === undefined) {
      const route = `/${method.parent.typeName}/${method.name}`;
      const strict = isStrictService(method.parent);
      bound = {
        route,
        metrics: this.options.metrics.forRoute(route, protocol),
        strict,
        mapOptions: { contractCodes: strict },
        succeeded: successLine(this.options.logger, route, protocol),
      };
      byProtocol.set(protocol, bound);
    }
    return bound;
  }
}

/** A call's credentials, read from its headers and connection only if its service asks who calls (an open one does not). */
class PresentedCredentials implements Credentials {
  constructor(private readonly start: CallStart) {}

  get authorization(): string | undefined {
    return this.start.header("authorization");
  }

  get certificateNames(): readonly string[] | undefined {
    return certificateNamesOf(this.start.socket);
  }

  get userId(): string | undefined {
    return this.start.header("user_id") ?? this.start.header("user-id");
  }
}

/**
 * A call's context values, as connect-es's createContextValues keeps them but with its methods on the prototype: that
 * object literal makes three functions for every call.
 */
export class CallValues implements ContextValues {
  private readonly values = new Map<symbol, unknown>();

  get<T>(key: ContextKey<T>): T {
    return this.values.has(key.id) ? (this.values.get(key.id) as T) : key.defaultValue;
  }

  set<T>(key: ContextKey<T>, value: T): this {
    this.values.set(key.id, value);
    return this;
  }

  delete(key: ContextKey<unknown>): this {
    this.values.delete(key.id);
    return this;
  }
}

/*
 * Request ids in the form of a random UUID: random per process, then counted (formatting a random UUID for every call
 * took about 1 µs). The count's last two hex digits come from a table, the rest is formatted once every 256 calls.
 * Unique, not secret: they tie log lines and traces together; knowing one grants nothing.
 */
const requestIdPrefix = randomUUID().slice(0, 24);
const hexPairs = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, "0"));
let requestCount = 0;
let requestIdStem = "";
function newRequestId(): string {
  const count = requestCount++;
  const low = count % 256;
  if (low === 0) requestIdStem = requestIdPrefix + (count / 256).toString(16).padStart(10, "0");
  return requestIdStem + hexPairs[low]!;
}

interface BoundRoute {
  readonly route: string;
  readonly metrics: RouteMetrics;
  /** A strict (unYOLO) service's method: its answers carry the contract's headers. */
  readonly strict: boolean;
  /** How its errors are mapped: a strict service's carry unYOLO's code words. */
  readonly mapOptions: MapOptions;
  /** Writes a successful call's access line. */
  readonly succeeded: SuccessLine;
}

/** One call between `begin` and `finish`. */
export class Call {
  private readonly started = performance.now();
  private finished = false;
  private streaming = false;
  /** Why the call was refused on its headers alone (authentication), if it was: it is already finished. */
  refusal: ConnectError | undefined;

  constructor(
    private readonly logger: Logger,
    private readonly route: BoundRoute,
    readonly protocol: Protocol,
    readonly requestId: string,
    /** What the implementation reads from its HandlerContext: principal, request id, metadata, protocol. */
    readonly values: ContextValues,
    private readonly intake: IntakeBudget,
    /** The call's server span, when tracing is on. */
    private readonly span: RpcSpan | undefined,
  ) {}

  /** The headers every answer to this call carries, whatever it is: its request id, and a strict service's own. */
  get ownHeaders(): Record<string, string> {
    return this.route.strict ? { "x-request-id": this.requestId, ...strictResponseHeaders } : { "x-request-id": this.requestId };
  }

  /** The caller is who the credentials name, or no one (an open service): the call goes on. */
  admit(principal: Principal | undefined): this {
    if (principal) this.values.set(principalKey, principal);
    return this;
  }

  /** The credentials were refused: the call is finished, its refusal to be answered. */
  refuse(error: unknown): this {
    this.refusal = this.finish(error);
    return this;
  }

  /** Runs the implementation inside the call's span (as is when tracing is off). */
  run<T>(work: () => T): T {
    return this.span === undefined ? work() : this.span.run(work);
  }

  /** A streamed answer produced inside the call's span. */
  bind<T>(stream: AsyncIterable<T>): AsyncIterable<T> {
    return this.span === undefined ? stream : this.span.bind(stream);
  }

  /**
   * Where the transport counts the body of `request` as it reads it: the intake budget for a caller without a
   * principal (an open service), nothing for an authenticated one. Without `request`, the reader releases it
   * (IntakeBudget.tally).
   */
  bodyTally(request?: ClosingRequest): BodyTally | undefined {
    return this.values.get(principalKey) === undefined ? this.intake.tally(request) : undefined;
  }

  /** A server stream has started: it counts as in flight until it finishes. */
  streamStarted(): void {
    if (this.streaming || this.finished) return;
    this.streaming = true;
    this.route.metrics.streamOpened();
  }

  /**
   * Ends the call, once: maps what was thrown through the one status mapper, counts the outcome and writes the call's
   * one log line. Returns the error as the client must see it (undefined for success), however often it is called.
   */
  finish(error?: unknown): ConnectError | undefined {
    const mapped = error === undefined ? undefined : toConnectError(error, this.route.mapOptions);
    if (this.finished) return mapped;
    this.finished = true;
    const ms = performance.now() - this.started;
    this.route.metrics.finished(mapped?.code ?? okCode, ms / 1000);
    if (this.streaming) this.route.metrics.streamClosed();
    // The access line is written inside the span, so it carries the trace's ids.
    if (this.span === undefined) this.log(error, mapped, ms);
    else this.span.run(() => this.log(error, mapped, ms));
    this.span?.end(mapped?.code ?? okCode, mapped === undefined ? this.values.get(httpStatusKey) : httpStatusOf(mapped.code));
    return mapped;
  }

  private log(error: unknown, mapped: ConnectError | undefined, ms: number): void {
    if (mapped === undefined) return this.route.succeeded(this.requestId, Math.round(ms));
    // Logs carry the error's category (Agent V1 §7), never its message or metadata.
    const fields = { request_id: this.requestId, route: this.route.route, protocol: this.protocol, code: Code[mapped.code], ms: Math.round(ms), category: errorInfoOf(mapped)?.metadata.category };
    if (isExpected(error)) this.logger.info(fields, "request");
    else this.logger.error({ ...fields, err: error }, "request failed");
  }
}
