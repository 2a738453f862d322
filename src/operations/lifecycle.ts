import { randomBytes } from "node:crypto";
import type { JsonObject } from "@bufbuild/protobuf";
import type { OperationRow, GrantRow, StoreTransaction } from "./store.js";

/** Spec §3: pending -> approved -> executing, and the five terminal states. */
export const terminalStates = new Set(["succeeded", "failed", "denied", "expired", "canceled"]);
export const activeStates = ["pending", "approved", "executing"];

/** A trimmed reason holds 1 to 2000 characters (code points, not UTF-16 units). */
export function isReasonLength(trimmed: string): boolean {
  if (trimmed.length === 0 || trimmed.length > 4000) return false;
  let characters = 0;
  for (const _ of trimmed) characters++;
  return characters <= 2000;
}

/** `op_` / `req_` + 24 url-safe random characters. */
export function newId(prefix: string): string {
  return `${prefix}_${randomBytes(18).toString("base64url")}`;
}

/** Compare-and-swap on revision: the change happens only if nobody else changed the operation first. */
export async function transition(tx: StoreTransaction, operation: OperationRow, change: Partial<OperationRow>, now: Date): Promise<OperationRow | undefined> {
  const { count } = await tx.operation.updateMany({
    where: { id: operation.id, revision: operation.revision },
    data: { ...change, revision: operation.revision + 1, updatedAt: now } as never,
  });
  if (count === 0) return undefined;
  return { ...operation, ...change, revision: operation.revision + 1, updatedAt: now } as OperationRow;
}

/** The event (the feed, wake-ups) and the audit record of an operation's change. */
export async function record(
  tx: StoreTransaction,
  kind: string,
  operation: OperationRow,
  options: { grantId?: string; actor: string; category?: string; detail?: JsonObject },
): Promise<void> {
  const grantId = options.grantId ?? operation.approvalId ?? null;
  await tx.event.create({
    data: { kind, clientId: operation.clientId, operationId: operation.id, grantId, revision: operation.revision, payload: { state: operation.state } },
  });
  await tx.auditRecord.create({
    data: {
      actor: options.actor,
      actorKind: options.actor === "operator" || options.actor === "sweeper" ? "system" : "client",
      action: kind,
      category: options.category ?? null,
      operationId: operation.id,
      grantId,
      detail: { state: operation.state, revision: operation.revision, ...options.detail },
    },
  });
}

/** The event and the audit record of a grant's change. */
export async function recordGrant(tx: StoreTransaction, kind: string, grant: GrantRow, actor: string): Promise<void> {
  await tx.event.create({ data: { kind, clientId: grant.clientId, grantId: grant.id, operationId: grant.operationId, revision: grant.revision, payload: { status: grant.status } } });
  await tx.auditRecord.create({
    data: { actor, actorKind: actor === "sweeper" ? "system" : "operator", action: kind, grantId: grant.id, operationId: grant.operationId, detail: { status: grant.status, revision: grant.revision } },
  });
}
