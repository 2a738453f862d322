import { setTimeout as delay } from "node:timers/promises";
import type { Logger } from "../logger.js";
import { Prisma } from "../store/database.js";
import { isStorageUnavailable } from "../store/storage-errors.js";
import type { Clock } from "./clock.js";
import { newId } from "./lifecycle.js";
import type { Notifier } from "./notifier.js";
import { recordOutcome, recordProgress, type Recovery } from "./outcomes.js";
import type { ExecutionOutcome } from "./providers/provider.js";
import type { ProviderRegistry } from "./providers/registry.js";
import { ReplicaLease, toExecute } from "./replica-lease.js";
import { queryRows, type OperationRow, type StoreClient } from "./store.js";
import { outcomeAttributes, traceOperationStep } from "../telemetry/operation-spans.js";

export interface WorkerOptions {
  /**
   * The worker's own connections (on PostgreSQL a small pool of its own): claims, outcomes and heartbeats never wait
   * behind the request path's queries, however many submissions are in flight.
   */
  store: StoreClient;
  providers: ProviderRegistry;
  notifier: Notifier;
  logger: Logger;
  clock: Clock;
  /** Operations executed at once by this process. */
  concurrency?: number;
  /** How often to look for approved operations besides the wake-ups (another process on the same SQLite file). */
  pollMs?: number;
  /**
   * How long this replica's claim on its operations outlives its last heartbeat. Operations claimed by a replica whose
   * lease has lapsed are reconciled by another one; a live replica's are never touched.
   */
  leaseMs?: number;
  /** The replica's id, when something else must know it first (the native calls this replica holds). */
  id?: string;
}

const defaultLeaseMs = 15_000;
/** What an execution ends as when the database refuses its outcome (not for being down: for what it holds). */
const unrecorded: ExecutionOutcome = { state: "failed", code: "result_not_recorded", message: "the execution finished but its outcome could not be stored" };
/** An outcome that could not be written is tried again after this, doubling to the cap, until the database is back. */
const firstRetryMs = 250;
const maxRetryMs = 5_000;

/**
 * Executes approved operations exactly once: operations are claimed by one statement that moves them from approved
 * to executing (one winner, across replicas too), run by their provider, and their proven outcome recorded. An
 * outcome that cannot be proven is never retried: the operation fails with `upstream_result_unknown`, unless a lapsed
 * replica left it and its provider can replay it (an upstream that deduplicates by idempotency key). An outcome the
 * database could not take (it is down) is kept and written once it is back. Nothing a database error does escapes:
 * every failure is logged and retried, none ends the process.
 */
export class ExecutionWorker {
  readonly id: string;
  private readonly running = new Set<Promise<void>>();
  private readonly stopping = new AbortController();
  private readonly leaseMs: number;
  private readonly lease: ReplicaLease;
  private starting: Promise<void> | undefined;
  private loops: Promise<void>[] = [];

  constructor(private readonly options: WorkerOptions) {
    this.id = options.id ?? newId("replica");
    this.leaseMs = options.leaseMs ?? defaultLeaseMs;
    // A replica stopping leaves what it took over to the next one (its lease ends with it) rather than half-sending it.
    const replay = (operation: OperationRow): void => {
      if (!this.stopping.signal.aborted) this.begin(operation, "replay");
    };
    this.lease = new ReplicaLease({ ...options, id: this.id, leaseMs: this.leaseMs, replay });
  }

  /**
   * Takes a lease, trying again while the database cannot be reached, then starts claiming. Resolves once it claims
   * (or once stopped first); never rejects.
   */
  start(): Promise<void> {
    this.starting ??= this.takeLease().then(() => {
      if (this.stopping.signal.aborted) return;
      this.options.logger.info({ replica: this.id, lease_seconds: this.leaseMs / 1000 }, "execution worker started");
      this.loops = [this.claimLoop(), this.keepLease()];
    });
    return this.starting;
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    await this.starting;
    await Promise.all(this.loops);
    await Promise.allSettled(this.running);
    await this.lease.release().catch(() => undefined);
  }

  /** Renews the lease now (heartbeat, and reconciliation of lapsed replicas' operations once due). */
  renewLease(): Promise<void> {
    return this.lease.renew();
  }

  /**
   * Claims while it has room. With room, it sleeps until an operation becomes approved (or the poll); when full,
   * until one of its executions ends: other changes wake nothing here.
   */
  private async claimLoop(): Promise<void> {
    const { notifier, logger, pollMs = 1000, concurrency = 8 } = this.options;
    const { signal } = this.stopping;
    while (!signal.aborted) {
      // Ends this round's waits, whichever way the round ends.
      const round = new AbortController();
      const stop = () => round.abort();
      signal.addEventListener("abort", stop, { once: true });
      try {
        const room = concurrency - this.running.size;
        // Replays of lapsed replicas' operations count too, and may take it past the bound for a while.
        if (room <= 0) {
          await Promise.race([...this.running, delay(pollMs, undefined, { signal: round.signal }).catch(() => undefined)]);
          continue;
        }
        // Listen before claiming, so an approval committed during the claim is not slept through.
        const approved = notifier.waitForWork(pollMs, round.signal);
        const claimed = await this.claim(room).catch((error: unknown) => {
          logger.error({ err: error, category: "storage" }, "worker could not claim operations");
          return [];
        });
        for (const operation of claimed) this.begin(operation);
        if (claimed.length < room) await approved;
      } finally {
        round.abort();
        signal.removeEventListener("abort", stop);
      }
    }
  }

  /**
   * Up to `room` of the longest-approved operations, moved to executing under this replica, in one statement. An
   * approved operation that already has a holder is a native call its route executes: never the worker's.
   */
  private async claim(room: number): Promise<OperationRow[]> {
    const { store, clock, notifier } = this.options;
    const now = clock.now();
    // On PostgreSQL, rows another replica is claiming at this moment are skipped rather than waited for. The pick is
    // materialized: as a plain `IN (subquery)` PostgreSQL may run it again per row and claim more than `room`.
    const skipLocked = store.provider === "postgresql" ? Prisma.sql`FOR UPDATE SKIP LOCKED` : Prisma.empty;
    const claimed = await queryRows<OperationRow>(
      store,
      Prisma.sql`
      WITH picked AS MATERIALIZED (SELECT "id" FROM "Operation" WHERE "state" = 'approved' AND "claimedBy" IS NULL ORDER BY "updatedAt" LIMIT ${room} ${skipLocked})
      UPDATE "Operation" SET "state" = 'executing', "claimedBy" = ${this.id}, "claimedAt" = ${now}, "updatedAt" = ${now}, "revision" = "revision" + 1
      WHERE "state" = 'approved' AND "claimedBy" IS NULL AND "id" IN (SELECT "id" FROM picked)
      RETURNING *`,
    );
    for (const operation of claimed) notifier.rowChanged(operation);
    return claimed;
  }

  /** Runs an execution: a claimed operation, or (`replay`) one a lapsed replica left, sent again with the same key. */
  private begin(operation: OperationRow, recovery?: Recovery): void {
    const execution = traceOperationStep(operation, `execute ${operation.operation}`, {}, () => this.execute(operation, recovery)).finally(() =>
      this.running.delete(execution),
    );
    this.running.add(execution);
  }

  /** Never rejects: an execution's every failure ends in an outcome, and every outcome is recorded or logged. */
  private async execute(operation: OperationRow, recovery?: Recovery): Promise<void> {
    const { providers, logger } = this.options;
    const provider = providers.get(operation.operation);
    // Progress is shown in order and at most one write at a time; a lost one is only a missed summary.
    let progress: Promise<void> = Promise.resolve();
    let outcome: ExecutionOutcome;
    try {
      if (!provider) throw new Error(`no provider for ${operation.operation}`);
      outcome = await provider.execute(toExecute(operation), {
        signal: this.stopping.signal,
        reportProgress: (summary: string) => {
          progress = progress.then(() => this.showProgress(operation.id, summary));
        },
      });
    } catch {
      // The provider may have acted before it failed: that is not ours to repeat.
      logger.warn({ operation_id: operation.id, category: "unavailable" }, "operation outcome unknown");
      outcome = { state: "failed", code: "upstream_result_unknown", message: "the outcome of the execution is unknown; it was not retried" };
    }
    await progress;
    await traceOperationStep(operation, "outcome", outcomeAttributes(outcome), () => this.record(operation.id, outcome, recovery));
  }

  private async showProgress(operationId: string, summary: string): Promise<void> {
    const { store, clock, notifier, logger } = this.options;
    try {
      const written = await recordProgress(store, this.id, operationId, summary, clock.now());
      if (written) notifier.rowChanged(written);
    } catch (error) {
      logger.warn({ err: error, operation_id: operationId, category: "storage" }, "could not show an operation's progress");
    }
  }

  /**
   * Writes the outcome, once. While the database cannot be reached it keeps it and tries again, backing off, until
   * the write goes through or the process stops (then the operation is reconciled like any a stopped replica left).
   * An outcome the database refuses outright (a result it cannot store) is replaced by a failure that says so.
   */
  private async record(operationId: string, outcome: ExecutionOutcome, recovery: Recovery | undefined): Promise<void> {
    const { store, clock, notifier, logger } = this.options;
    for (let retryMs = firstRetryMs; ; retryMs = Math.min(retryMs * 2, maxRetryMs)) {
      try {
        const written = await recordOutcome(store, this.id, operationId, outcome, clock.now(), recovery);
        if (written) notifier.rowChanged(written);
        return;
      } catch (error) {
        if (!isStorageUnavailable(error)) {
          logger.error({ err: error, operation_id: operationId, category: "storage" }, "could not record an operation's outcome");
          if (outcome === unrecorded) return;
          outcome = unrecorded;
          continue;
        }
        logger.warn({ operation_id: operationId, category: "storage", retry_ms: retryMs }, "database unavailable, the outcome will be recorded once it is back");
      }
      const stopped = await delay(retryMs, false, { signal: this.stopping.signal }).catch(() => true);
      if (stopped) {
        logger.warn({ operation_id: operationId, category: "storage" }, "stopped before the outcome could be recorded; another replica will reconcile it");
        return;
      }
    }
  }

  /** The first lease, before any claim: another replica counts a claim by a replica without one as left behind. */
  private async takeLease(): Promise<void> {
    const { signal } = this.stopping;
    for (let retryMs = firstRetryMs; !signal.aborted; retryMs = Math.min(retryMs * 2, maxRetryMs)) {
      try {
        return await this.lease.renew();
      } catch (error) {
        this.options.logger.warn({ err: error, replica: this.id, category: "storage", retry_ms: retryMs }, "could not take the replica lease; trying again");
      }
      await delay(retryMs, undefined, { signal }).catch(() => undefined);
    }
  }

  /** Renews the lease every third of it; a failed renewal is logged and tried again at the next. */
  private async keepLease(): Promise<void> {
    const { logger } = this.options;
    const { signal } = this.stopping;
    for (;;) {
      await delay(this.leaseMs / 3, undefined, { signal }).catch(() => undefined);
      if (signal.aborted) return;
      await this.lease.renew().catch((error: unknown) => logger.warn({ err: error, replica: this.id, category: "storage" }, "could not renew the replica lease"));
    }
  }
}
