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
}

/**
 * Executes approved operations exactly once: an operation is claimed by a compare-and-swap from approved to
 * executing (one winner, across replicas too), run by its provider, and its proven outcome recorded. An outcome
 * that cannot be proven is never retried: the operation fails with `upstream_result_unknown`.
 */
export class ExecutionWorker {
  readonly id = newId("worker");
  private readonly running = new Set<Promise<void>>();
  private readonly stopping = new AbortController();
  private loop: Promise<void> | undefined;

  constructor(private readonly options: WorkerOptions) {}

  /** Reconciles what a previous process left executing, then starts claiming. */
  async start(): Promise<void> {
    await this.reconcileInterrupted();
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    await this.loop;
    await Promise.allSettled(this.running);
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

  /** Operations a stopped process left executing are reconciled by their provider, never run again. */
  private async reconcileInterrupted(): Promise<void> {
    const { store, providers, logger } = this.options;
    const interrupted = await store.operation.findMany({ where: { state: "executing", NOT: { claimedBy: this.id } } });
    for (const operation of interrupted) {
      const known = await providers.get(operation.operation)?.reconcile(toExecute(operation)).catch(() => undefined);
      logger.info({ operation_id: operation.id, reconciled: known?.state ?? "unknown" }, "reconciled an interrupted operation");
      await this.finish(
        operation.id,
        known ?? { state: "failed", code: "upstream_result_unknown", message: "the server stopped during the execution; it was not retried" },
      );
    }
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
