import { setTimeout as delay } from "node:timers/promises";
import type { JsonObject } from "@bufbuild/protobuf";
import type { Logger } from "../logger.js";
import { newId, transition, type Clock } from "./broker.js";
import type { Notifier } from "./notifier.js";
import type { ExecutionOutcome, OperationToExecute } from "./providers/provider.js";
import type { ProviderRegistry } from "./providers/registry.js";
import type { OperationRow, StoreClient } from "./store.js";

export interface WorkerOptions {
  store: StoreClient;
  providers: ProviderRegistry;
  notifier: Notifier;
  logger: Logger;
  clock: Clock;
  /** Operations executed at once by this process. */
  concurrency?: number;
  /** How often to look for approved operations besides the wake-ups (other replicas' approvals). */
  pollMs?: number;
  /**
   * How long this replica's claim on its operations outlives its last heartbeat. Operations claimed by a replica whose
   * lease has lapsed are reconciled by another one; a live replica's are never touched.
   */
  leaseMs?: number;
}

const defaultLeaseMs = 15_000;

/**
 * Executes approved operations exactly once: an operation is claimed by a compare-and-swap from approved to
 * executing (one winner, across replicas too), run by its provider, and its proven outcome recorded. An outcome
 * that cannot be proven is never retried: the operation fails with `upstream_result_unknown`.
 *
 * Each worker is a replica with a lease: a row it heartbeats every third of the lease. The operations a replica
 * claimed stay its own while the lease holds; once it lapses (the process was killed, or cut off from the database
 * for longer than the lease), any other replica reconciles them, and never runs them again.
 */
export class ExecutionWorker {
  readonly id = newId("replica");
  private readonly running = new Set<Promise<void>>();
  private readonly stopping = new AbortController();
  private readonly leaseMs: number;
  private loops: Promise<void>[] = [];

  constructor(private readonly options: WorkerOptions) {
    this.leaseMs = options.leaseMs ?? defaultLeaseMs;
  }

  /** Takes a lease, reconciles what lapsed replicas left executing, then starts claiming. */
  async start(): Promise<void> {
    await this.heartbeat();
    await this.reconcileLapsed();
    this.options.logger.info({ replica: this.id, lease_seconds: this.leaseMs / 1000 }, "execution worker started");
    this.loops = [this.run(), this.keepLease()];
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    await Promise.all(this.loops);
    await Promise.allSettled(this.running);
    // Gone for good: nothing of ours is executing any more, so nobody needs to wait for the lease to lapse.
    await this.options.store.replica.deleteMany({ where: { id: this.id } }).catch(() => undefined);
  }

  private async run(): Promise<void> {
    const { notifier, pollMs = 1000, concurrency = 8 } = this.options;
    while (!this.stopping.signal.aborted) {
      try {
        if (this.running.size < concurrency) await this.claimAndExecute(concurrency - this.running.size);
      } catch (error) {
        this.options.logger.error({ err: error }, "worker could not claim operations");
      }
      await notifier.waitForChange("*", pollMs, this.stopping.signal);
    }
  }

  private async claimAndExecute(capacity: number): Promise<void> {
    const { store, clock } = this.options;
    const approved = await store.operation.findMany({ where: { state: "approved" }, orderBy: { updatedAt: "asc" }, take: capacity });
    for (const operation of approved) {
      const now = clock.now();
      const claimed = await transition(store, operation, { state: "executing", claimedBy: this.id, claimedAt: now }, now);
      if (!claimed) continue; // another worker won it
      this.options.notifier.changed(operation.id);
      const execution = this.execute(claimed).finally(() => this.running.delete(execution));
      this.running.add(execution);
    }
  }

  private async execute(operation: OperationRow): Promise<void> {
    const { providers, logger } = this.options;
    const provider = providers.get(operation.operation);
    let current = operation;
    let outcome: ExecutionOutcome;
    try {
      if (!provider) throw new Error(`no provider for ${operation.operation}`);
      outcome = await provider.execute(toExecute(operation), {
        signal: this.stopping.signal,
        reportProgress: (summary: string) => {
          void this.update(current, { presentationSummary: summary.slice(0, 500) }).then((updated) => {
            if (updated) current = updated;
          });
        },
      });
    } catch (error) {
      // The provider may have acted before it failed: that is not ours to repeat.
      logger.warn({ operation_id: operation.id, category: "unavailable" }, "operation outcome unknown");
      outcome = { state: "failed", code: "upstream_result_unknown", message: "the outcome of the execution is unknown; it was not retried" };
    }
    await this.finish(operation.id, outcome);
  }

  /** Records an outcome, retrying the compare-and-swap if a progress update moved the revision meanwhile. */
  private async finish(id: string, outcome: ExecutionOutcome): Promise<void> {
    for (;;) {
      const operation = await this.options.store.operation.findUnique({ where: { id } });
      if (!operation || operation.state !== "executing") return;
      const now = this.options.clock.now();
      const change =
        outcome.state === "succeeded"
          ? { state: "succeeded", result: outcome.result, terminalAt: now }
          : { state: "failed", errorCode: outcome.code, errorMessage: outcome.message.slice(0, 500), terminalAt: now };
      const done = await this.update(operation, change);
      if (done) {
        await this.options.store.auditRecord.create({
          data: { actor: this.id, actorKind: "system", action: `operation.${outcome.state}`, operationId: id, category: outcome.state === "failed" ? "other" : null, detail: outcome.state === "failed" ? { code: outcome.code } : {} },
        });
        return;
      }
    }
  }

  private async update(operation: OperationRow, change: Partial<OperationRow>): Promise<OperationRow | undefined> {
    const updated = await transition(this.options.store, operation, change, this.options.clock.now());
    if (updated) {
      await this.options.store.event.create({
        data: { kind: `operation.${updated.state}`, clientId: updated.clientId, operationId: updated.id, revision: updated.revision, payload: { state: updated.state } },
      });
      this.options.notifier.changed(updated.id);
    }
    return updated;
  }

  /** Heartbeats, and after each one reconciles what replicas whose lease lapsed left executing. */
  private async keepLease(): Promise<void> {
    const { logger } = this.options;
    const { signal } = this.stopping;
    for (;;) {
      await delay(this.leaseMs / 3, undefined, { signal }).catch(() => undefined);
      if (signal.aborted) return;
      try {
        await this.heartbeat();
        await this.reconcileLapsed();
      } catch (error) {
        logger.warn({ err: error, replica: this.id, category: "storage" }, "could not renew the replica lease");
      }
    }
  }

  private async heartbeat(): Promise<void> {
    const heartbeatAt = this.options.clock.now();
    // An upsert: after an outage longer than the lease another replica may have removed the row.
    await this.options.store.replica.upsert({ where: { id: this.id }, create: { id: this.id, heartbeatAt }, update: { heartbeatAt } });
  }

  /**
   * Operations left executing by a replica that no longer holds a lease (or by none: claimed before leases existed)
   * are taken over by a compare-and-swap, so exactly one replica reconciles each, by its provider, never running it again.
   */
  private async reconcileLapsed(): Promise<void> {
    const { store, providers, logger, clock } = this.options;
    const lapsedBefore = new Date(clock.now().getTime() - this.leaseMs);
    const live = await store.replica.findMany({ where: { heartbeatAt: { gte: lapsedBefore } }, select: { id: true } });
    const holders = [this.id, ...live.map((replica) => replica.id)];
    const orphaned = await store.operation.findMany({
      where: { state: "executing", OR: [{ claimedBy: null }, { claimedBy: { notIn: holders } }] },
    });
    for (const operation of orphaned) {
      const now = clock.now();
      const taken = await transition(store, operation, { claimedBy: this.id, claimedAt: now }, now);
      if (!taken) continue; // another replica took it first, or it finished after all
      const known = await providers.get(operation.operation)?.reconcile(toExecute(operation)).catch(() => undefined);
      logger.info({ operation_id: operation.id, left_by: operation.claimedBy, reconciled: known?.state ?? "unknown" }, "reconciled an interrupted operation");
      await this.finish(
        operation.id,
        known ?? { state: "failed", code: "upstream_result_unknown", message: "the replica executing it stopped; it was not retried" },
      );
    }
    await store.replica.deleteMany({ where: { heartbeatAt: { lt: lapsedBefore }, id: { not: this.id } } });
  }
}

function toExecute(operation: OperationRow): OperationToExecute {
  return {
    id: operation.id,
    clientId: operation.clientId,
    operation: operation.operation,
    target: operation.target as JsonObject,
    arguments: operation.arguments as JsonObject,
  };
}
