import type { JsonObject } from "@bufbuild/protobuf";
import type { Logger } from "../logger.js";
import type { Clock } from "./clock.js";
import { endHeldCall } from "./held-calls.js";
import { transition } from "./lifecycle.js";
import type { Notifier } from "./notifier.js";
import { recordOutcome } from "./outcomes.js";
import type { OperationToExecute } from "./providers/provider.js";
import type { ProviderRegistry } from "./providers/registry.js";
import type { OperationRow, StoreClient } from "./store.js";

export interface LeaseOptions {
  /** The replica: its worker's id. */
  id: string;
  store: StoreClient;
  providers: ProviderRegistry;
  notifier: Notifier;
  logger: Logger;
  clock: Clock;
  leaseMs: number;
  /** Executes again, off the lease's own loop, an operation taken over whose provider answered `"replay"`. */
  replay(operation: OperationRow): void;
}

/**
 * A replica's lease on the operations it claimed: a row it heartbeats every third of the lease. Once a replica's
 * heartbeat is older than the lease (the process was killed, or cut off from the database for longer), another one
 * reconciles what it left executing, by its provider, never running it again unless the provider shows that sending it
 * again is safe (an upstream that honours an idempotency key): then it is replayed, with the same key.
 *
 * A replica reconciles others only after it has itself held its lease for a whole lease period without a failed
 * heartbeat: when the database was out for everyone, the survivors' heartbeats are stale too, and each gets that
 * period to renew its own before anyone counts it as gone. This also holds at start, which may follow an outage.
 */
export class ReplicaLease {
  /** When the current run of successful heartbeats began; undefined after a failed one. */
  private renewedSince: number | undefined;
  private lastHeartbeat: number | undefined;

  constructor(private readonly options: LeaseOptions) {}

  /** Heartbeats, then reconciles what lapsed replicas left executing once this one has held its lease long enough. */
  async renew(): Promise<void> {
    try {
      await this.heartbeat();
    } catch (error) {
      this.renewedSince = undefined;
      throw error;
    }
    const now = this.options.clock.now().getTime();
    // Due every third of the lease: two thirds late is one third from lapsing (a stalled event loop, a slow database).
    if (this.lastHeartbeat !== undefined && now - this.lastHeartbeat > (2 * this.options.leaseMs) / 3) {
      this.options.logger.warn({ replica: this.options.id, since_last_ms: now - this.lastHeartbeat, lease_ms: this.options.leaseMs, category: "storage" }, "replica lease renewed late");
    }
    this.lastHeartbeat = now;
    this.renewedSince ??= now;
    if (now - this.renewedSince >= this.options.leaseMs) await this.reconcileLapsed();
  }

  /** Gone for good: nothing of this replica's is executing any more, so nobody needs to wait for the lease to lapse. */
  async release(): Promise<void> {
    await this.options.store.replica.deleteMany({ where: { id: this.options.id } });
  }

  private async heartbeat(): Promise<void> {
    const { store, id, clock } = this.options;
    const heartbeatAt = clock.now();
    // An upsert: after an outage longer than the lease another replica may have removed the row.
    await store.replica.upsert({ where: { id }, create: { id, heartbeatAt }, update: { heartbeatAt } });
  }

  /**
   * Native calls a lapsed replica held open waiting for an operator: their connection went with it, so they can no
   * longer go ahead, and an approval given now would approve nothing. They fail, with their pending approval.
   */
  private async endAbandonedCalls(holders: string[]): Promise<void> {
    const { store, clock, notifier, logger, id } = this.options;
    const left = await store.operation.findMany({ where: { state: { in: ["pending", "approved"] }, claimedBy: { notIn: holders }, NOT: { claimedBy: null } } });
    for (const operation of left) {
      const ended = await endHeldCall(store, operation, { ...abandoned, actor: id }, clock.now());
      if (!ended) continue;
      logger.info({ operation_id: operation.id, left_by: operation.claimedBy }, "ended a native call its replica left waiting");
      notifier.rowChanged(ended);
    }
  }

  /**
   * Operations left executing by a replica that no longer holds a lease (or by none: claimed before leases existed)
   * are taken over by a compare-and-swap, so exactly one replica reconciles each.
   */
  private async reconcileLapsed(): Promise<void> {
    const { store, providers, logger, clock, notifier, id, leaseMs } = this.options;
    const lapsedBefore = new Date(clock.now().getTime() - leaseMs);
    const live = await store.replica.findMany({ where: { heartbeatAt: { gte: lapsedBefore } }, select: { id: true } });
    const holders = [id, ...live.map((replica) => replica.id)];
    const orphaned = await store.operation.findMany({
      where: { state: "executing", OR: [{ claimedBy: null }, { claimedBy: { notIn: holders } }] },
    });
    for (const operation of orphaned) {
      const now = clock.now();
      const taken = await transition(store, operation, { claimedBy: id, claimedAt: now }, now);
      if (!taken) continue; // another replica took it first, or it finished after all
      const known = await providers.get(operation.operation)?.reconcile(toExecute(operation)).catch(() => undefined);
      const reconciled = known === "replay" ? "replay" : (known?.state ?? "unknown");
      logger.info({ operation_id: operation.id, left_by: operation.claimedBy, reconciled }, "reconciled an interrupted operation");
      // A replay waits on the upstream: the worker runs it, so heartbeats never wait behind it.
      if (known === "replay") {
        this.options.replay(taken);
        continue;
      }
      const outcome = known ?? { state: "failed" as const, code: "upstream_result_unknown", message: "the replica executing it stopped; it was not retried" };
      const written = await recordOutcome(store, id, operation.id, outcome, clock.now());
      if (written) notifier.rowChanged(written);
    }
    await this.endAbandonedCalls(holders);
    await store.replica.deleteMany({ where: { heartbeatAt: { lt: lapsedBefore }, id: { not: id } } });
  }
}

/** How a held native call ends when the replica keeping its connection is gone: nothing of it was forwarded. */
const abandoned = { state: "failed", errorCode: "native_call_interrupted", errorMessage: "the replica holding the call stopped before it went ahead" } as const;

export function toExecute(operation: OperationRow): OperationToExecute {
  return {
    id: operation.id,
    clientId: operation.clientId,
    operation: operation.operation,
    target: operation.target as JsonObject,
    arguments: operation.arguments as JsonObject,
  };
}
