import { record, transition } from "./lifecycle.js";
import type { OperationRow, StoreClient } from "./store.js";

/**
 * The store's side of native calls held by a replica (see NativeCalls): ending one that never reached its upstream,
 * and giving back the grant use one reserved when its upstream refused it.
 */

/** How a held call ends without being forwarded: withdrawn by its client, or left behind by its replica. */
export interface HeldCallEnd {
  state: "canceled" | "failed";
  errorCode: string;
  errorMessage: string;
  /** Who ended it, for the audit: the client, or the replica that found it abandoned. */
  actor: string;
}

/**
 * Ends a held call that is still pending or approved, with its pending approval, by a compare-and-swap on the
 * revision it was read at: undefined when it moved on meanwhile (decided, executing, or ended by someone else).
 */
export async function endHeldCall(store: StoreClient, operation: OperationRow, end: HeldCallEnd, now: Date): Promise<OperationRow | undefined> {
  if (operation.state !== "pending" && operation.state !== "approved") return undefined;
  return store.transaction(async (tx) => {
    const { actor, ...change } = end;
    const ended = await transition(tx, operation, { ...change, terminalAt: now }, now);
    if (!ended) return undefined;
    if (operation.approvalId) {
      await tx.grant.updateMany({
        where: { id: operation.approvalId, status: "pending" },
        data: { status: end.state, revision: { increment: 1 }, updatedAt: now },
      });
    }
    await record(tx, `operation.${end.state}`, ended, { actor, category: end.state === "canceled" ? "canceled" : "unavailable" });
    return ended;
  });
}

/**
 * Gives back the use a call took of its window grant when the upstream refused the call: the grant is as it was
 * before, if it is still in force (a use of a grant since revoked or expired is not given back; an execution grant
 * belongs to its one operation and has nothing to give back to).
 */
export async function releaseGrantUse(store: StoreClient, grantId: string, clientId: string, now: Date): Promise<void> {
  await store.transaction(async (tx) => {
    const { count } = await tx.grant.updateMany({
      where: { id: grantId, mode: "window", status: { in: ["active", "consumed"] }, usedCount: { gt: 0 }, OR: [{ expiresAt: null }, { expiresAt: { gt: now } }] },
      data: { status: "active", usesRemaining: { increment: 1 }, usedCount: { decrement: 1 }, revision: { increment: 1 }, updatedAt: now },
    });
    if (count === 0) return;
    const grant = await tx.grant.findUniqueOrThrow({ where: { id: grantId } });
    await tx.auditRecord.create({
      data: { actor: clientId, actorKind: "client", action: "grant.released", grantId, detail: { uses_remaining: grant.usesRemaining ?? 0 } },
    });
  });
}
