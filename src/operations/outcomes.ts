import type { ExecutionOutcome } from "./providers/provider.js";
import type { StoreClient, StoreTransaction } from "./store.js";

/** The new revision and state of an operation a worker wrote, for its event and wake-ups. */
export interface Written {
  clientId: string;
  revision: number;
  state: string;
}

/**
 * Records an execution's proven (or unknown) outcome with its event and audit record, in one transaction. Only the
 * replica holding the operation may: `undefined` when it is no longer executing under `replica` (another replica
 * reconciled it after this one's lease lapsed), and nothing is written.
 */
export async function recordOutcome(store: StoreClient, replica: string, operationId: string, outcome: ExecutionOutcome, now: Date): Promise<Written | undefined> {
  const change =
    outcome.state === "succeeded"
      ? { state: "succeeded", result: outcome.result, terminalAt: now }
      : { state: "failed", errorCode: outcome.code, errorMessage: outcome.message.slice(0, 500), terminalAt: now };
  return store.transaction(async (tx) => {
    const written = await changeHeld(tx, replica, operationId, change, now);
    if (!written) return undefined;
    await tx.event.create({ data: { kind: `operation.${written.state}`, clientId: written.clientId, operationId, revision: written.revision, payload: { state: written.state } } });
    await tx.auditRecord.create({
      data: {
        actor: replica,
        actorKind: "system",
        action: `operation.${outcome.state}`,
        operationId,
        category: outcome.state === "failed" ? "other" : null,
        detail: outcome.state === "failed" ? { code: outcome.code } : {},
      },
    });
    return written;
  });
}

/** Shows progress on an executing operation: a new revision with this summary, and its event. */
export function recordProgress(store: StoreClient, replica: string, operationId: string, summary: string, now: Date): Promise<Written | undefined> {
  return store.transaction(async (tx) => {
    const written = await changeHeld(tx, replica, operationId, { presentationSummary: summary.slice(0, 500) }, now);
    if (written) {
      await tx.event.create({ data: { kind: "operation.executing", clientId: written.clientId, operationId, revision: written.revision, payload: { state: written.state } } });
    }
    return written;
  });
}

/** Changes an operation while it is executing under `replica`, whatever revision progress has taken it to. */
async function changeHeld(
  tx: StoreTransaction,
  replica: string,
  operationId: string,
  change: Record<string, unknown>,
  now: Date,
): Promise<Written | undefined> {
  const { count } = await tx.operation.updateMany({
    where: { id: operationId, state: "executing", claimedBy: replica },
    data: { ...change, revision: { increment: 1 }, updatedAt: now },
  });
  if (count === 0) return undefined;
  return tx.operation.findUniqueOrThrow({ where: { id: operationId }, select: { clientId: true, revision: true, state: true } });
}
