import { Code } from "@connectrpc/connect";
import { AxonError, invalidArgument, notFound } from "../errors.js";
import { Prisma } from "../store/database.js";
import type { Clock } from "./clock.js";
import { activeStates, record, terminalStates, transition } from "./lifecycle.js";
import type { Notifier } from "./notifier.js";
import { afterCursor, newestFirst, pageLimit, pageOf } from "./pages.js";
import { findOperation, type OperationRow, type StoreClient } from "./store.js";
import { idempotencyKeyPattern } from "./submission.js";

export interface OwnOperationsOptions {
  store: StoreClient;
  notifier: Notifier;
  clock: Clock;
}

/** What a client may do with the operations it submitted: read them, list them, cancel them. */
export class OwnOperations {
  constructor(private readonly options: OwnOperationsOptions) {}

  async get(clientId: string, id: string): Promise<OperationRow> {
    const operation = await findOperation(this.options.store, Prisma.sql`"id" = ${id} AND "clientId" = ${clientId}`);
    // Another client's operation is as absent as one that never existed.
    if (!operation) throw notFound("OPERATION_NOT_FOUND", "operation not found", { operation_id: id });
    return operation;
  }

  async list(
    clientId: string,
    query: { idempotencyKey?: string; state?: string; limit?: number; cursor?: string },
  ): Promise<{ operations: OperationRow[]; nextCursor?: string }> {
    const { store } = this.options;
    const limit = pageLimit(query.limit, 20, 50);
    if (query.state && !terminalStates.has(query.state) && !activeStates.includes(query.state)) {
      throw invalidArgument("INVALID_STATE", "unknown state", [{ field: "state", description: "an operation state" }]);
    }
    if (query.idempotencyKey && !idempotencyKeyPattern.test(query.idempotencyKey)) {
      throw invalidArgument("INVALID_IDEMPOTENCY_KEY", "not an idempotency key", [{ field: "idempotency_key", description: "1-128 characters of A-Z a-z 0-9 . _ : - starting with a letter or digit" }]);
    }
    const after = await afterCursor(query.cursor, clientId, (id) => store.operation.findFirst({ where: { id, clientId }, select: { id: true, createdAt: true } }));
    const rows = await store.operation.findMany({
      where: {
        clientId,
        ...(query.idempotencyKey ? { idempotencyKey: query.idempotencyKey } : {}),
        ...(query.state ? { state: query.state } : {}),
        ...after,
      },
      orderBy: newestFirst,
      take: limit + 1,
    });
    const { items, nextCursor } = pageOf(rows, limit, clientId);
    return { operations: items, ...(nextCursor ? { nextCursor } : {}) };
  }

  /** Only the requester, only pending or approved; terminal ones come back unchanged. */
  async cancel(clientId: string, id: string): Promise<OperationRow> {
    const { store, clock, notifier } = this.options;
    for (;;) {
      const operation = await this.get(clientId, id);
      if (terminalStates.has(operation.state)) return operation;
      if (operation.state === "executing") {
        throw new AxonError(Code.Aborted, "OPERATION_NOT_CANCELABLE", "an executing operation cannot be canceled", {
          metadata: { category: "conflict", operation_id: id },
        });
      }
      const now = clock.now();
      const changed = await store.transaction(async (tx) => {
        const updated = await transition(tx, operation, { state: "canceled", terminalAt: now, errorCode: "operation_canceled", errorMessage: "canceled by the requester" }, now);
        if (!updated) return undefined;
        // A pending approval goes with its operation; a window grant serves others and survives.
        if (operation.approvalId) {
          await tx.grant.updateMany({
            where: { id: operation.approvalId, status: "pending" },
            data: { status: "canceled", revision: { increment: 1 }, updatedAt: now },
          });
        }
        await record(tx, "operation.canceled", updated, { actor: clientId, category: "canceled" });
        return updated;
      });
      if (changed) {
        notifier.rowChanged(changed);
        return changed;
      }
    }
  }
}
