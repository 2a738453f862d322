import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import {
  Health,
  HealthCheckResponse_ServingStatus as ServingStatus,
  HealthCheckResponseSchema,
} from "../gen/grpc/health/v1/health_pb.js";
import { servedServices } from "./descriptors.js";

export { ServingStatus };

/** The name grpc.health.v1 reserves for the server as a whole. */
const wholeServer = "";

/**
 * The single source of readiness: /readyz and grpc.health.v1 both read it. Every served service follows
 * the server; draining is one-way, so a late markReady() cannot undo a shutdown.
 */
export class HealthState {
  private started = false;
  private draining = false;
  /** What readiness still waits for before the server may start (the database), named by /readyz meanwhile. */
  private awaited: string | undefined;
  private readonly knownServices: ReadonlySet<string>;
  private readonly wakeWatchers = new Set<() => void>();

  constructor(serviceNames: Iterable<string> = servedServices.map((service) => service.typeName)) {
    this.knownServices = new Set(serviceNames);
  }

  get ready(): boolean {
    return this.started && !this.draining;
  }

  /** Why it is not ready, for /readyz: what it waits for, or that it is starting or draining; undefined when ready. */
  get notReadyReason(): string | undefined {
    if (this.draining) return "draining";
    if (this.started) return undefined;
    return this.awaited === undefined ? "starting" : `waiting for the ${this.awaited}`;
  }

  /** Names what the start waits for (the database) until markReady(). */
  waitFor(dependency: string): void {
    this.awaited = dependency;
  }

  markReady(): void {
    if (this.started || this.draining) return;
    this.started = true;
    this.awaited = undefined;
    this.notifyWatchers();
  }

  markDraining(): void {
    if (this.draining) return;
    this.draining = true;
    this.notifyWatchers();
  }

  statusOf(service: string): ServingStatus {
    if (service !== wholeServer && !this.knownServices.has(service)) return ServingStatus.SERVICE_UNKNOWN;
    return this.ready ? ServingStatus.SERVING : ServingStatus.NOT_SERVING;
  }

  /** Every service with a status, the whole server ("") included: what Health.List reports. */
  allStatuses(): Map<string, ServingStatus> {
    return new Map([wholeServer, ...this.knownServices].map((service) => [service, this.statusOf(service)]));
  }

  /** The current status at once, then each change; ends when `signal` aborts. */
  async *watch(service: string, signal: AbortSignal): AsyncIterable<ServingStatus> {
    let last: ServingStatus | undefined;
    while (!signal.aborted) {
      // Reading the status and registering for the next change happen in one synchronous step, so no change is missed.
      const current = this.statusOf(service);
      if (current !== last) {
        last = current;
        yield current;
        continue;
      }
      await this.nextChange(signal);
    }
  }

  private nextChange(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const wake = (): void => {
        this.wakeWatchers.delete(wake);
        signal.removeEventListener("abort", wake);
        resolve();
      };
      this.wakeWatchers.add(wake);
      signal.addEventListener("abort", wake, { once: true });
    });
  }

  private notifyWatchers(): void {
    for (const wake of [...this.wakeWatchers]) wake();
  }
}

/** grpc.health.v1.Health over a HealthState, for `router.service(Health, healthService(state))`. */
export function healthService(state: HealthState): ServiceImpl<typeof Health> {
  return {
    check(request) {
      const status = state.statusOf(request.service);
      // The health spec answers NOT_FOUND for a service the server does not know, rather than a status.
      if (status === ServingStatus.SERVICE_UNKNOWN) throw new ConnectError("unknown service", Code.NotFound);
      return create(HealthCheckResponseSchema, { status });
    },
    async *watch(request, context) {
      // Unlike Check, Watch reports SERVICE_UNKNOWN and stays open: the spec lets the service appear later.
      for await (const status of state.watch(request.service, context.signal)) {
        yield create(HealthCheckResponseSchema, { status });
      }
    },
    list() {
      const statuses = Object.fromEntries(
        [...state.allStatuses()].map(([service, status]) => [service, create(HealthCheckResponseSchema, { status })]),
      );
      return { statuses };
    },
  };
}
