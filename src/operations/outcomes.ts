import { Prisma } from "../store/database.js";
import type { ExecutionOutcome } from "./providers/provider.js";
import type { BatchResult } from "../store/sqlite/adapter.js";
import { dialects } from "./sql-dialect.js";
import { directStatements, type OperationRow, type StoreClient } from "./store.js";

/**
 * Records an execution's proven (or unknown) outcome with its event and audit record, all or nothing, and returns the
 * operation as written; a recovered one says how (`recoveredBy`, and `recovered_by` in the audit record). Only the
 * replica holding the operation may: `undefined` when it is no longer executing under `replica` (another replica
 * reconciled it after this one's lease lapsed), and nothing is written. On PostgreSQL this
 * is one statement: ending an operation changes the load counts, whose rows stay locked only for the statement and its
 * commit. On SQLite, one batch: one message to the database thread, so a worker's writes never block the event loop
 * for a step of theirs.
 */
/** How an outcome was recovered after the replica executing it stopped: `replay`, sent again with the same idempotency key. */
export type Recovery = "replay";

export async function recordOutcome(
  store: StoreClient,
  replica: string,
  operationId: string,
  outcome: ExecutionOutcome,
  now: Date,
  recovery?: Recovery,
): Promise<OperationRow | undefined> {
  const sql = dialects[store.provider];
  const succeeded = outcome.state === "succeeded";
  const change = Prisma.sql`"state" = ${outcome.state}, "result" = ${sql.json(succeeded ? outcome.result : null)},
    "errorCode" = ${succeeded ? null : outcome.code}, "errorMessage" = ${succeeded ? null : outcome.message.slice(0, 500)},
    "terminalAt" = ${sql.time(now)}, "recoveredBy" = ${recovery ?? null}`;
  const kind = `operation.${outcome.state}`;
  const event = Prisma.sql`${kind}, "clientId", ${operationId}, "revision", ${sql.json({ state: outcome.state })}, ${sql.time(now)}`;
  const audit = Prisma.sql`${replica}, 'system', ${kind}, ${succeeded ? null : "other"}, ${operationId},
    ${sql.json({ ...(succeeded ? {} : { code: outcome.code }), ...(recovery ? { recovered_by: recovery } : {}) })}, ${sql.time(now)}`;
  if (store.provider === "postgresql") {
    const [written] = await store.$queryRaw<OperationRow[]>`
      WITH changed AS (${changeHeld(replica, operationId, change, now)}), event AS (
        INSERT INTO "Event" ("kind", "clientId", "operationId", "revision", "payload", "createdAt") SELECT ${event} FROM changed
      ), audit AS (
        INSERT INTO "AuditRecord" ("actor", "actorKind", "action", "category", "operationId", "detail", "at") SELECT ${audit} FROM changed
      )
      SELECT * FROM changed`;
    return written;
  }
  // SQLite: one batch, each insert going in only if the statement before it wrote (`changes()`).
  return writtenBy(
    await directStatements(store).batch([
      changeHeld(replica, operationId, change, now),
      Prisma.sql`INSERT INTO "Event" ("kind", "clientId", "operationId", "revision", "payload", "createdAt")
        SELECT ${event} FROM "Operation" WHERE "id" = ${operationId} AND changes() = 1`,
      Prisma.sql`INSERT INTO "AuditRecord" ("actor", "actorKind", "action", "category", "operationId", "detail", "at") SELECT ${audit} WHERE changes() = 1`,
    ]),
  );
}

/** Shows progress on an executing operation: a new revision with this summary, and its event. */
export async function recordProgress(store: StoreClient, replica: string, operationId: string, summary: string, now: Date): Promise<OperationRow | undefined> {
  const sql = dialects[store.provider];
  const change = changeHeld(replica, operationId, Prisma.sql`"presentationSummary" = ${summary.slice(0, 500)}`, now);
  const event = Prisma.sql`'operation.executing', "clientId", ${operationId}, "revision", ${sql.json({ state: "executing" })}, ${sql.time(now)}`;
  if (store.provider === "postgresql") {
    const [written] = await store.$queryRaw<OperationRow[]>`
      WITH changed AS (${change}), event AS (
        INSERT INTO "Event" ("kind", "clientId", "operationId", "revision", "payload", "createdAt") SELECT ${event} FROM changed
      )
      SELECT * FROM changed`;
    return written;
  }
  return writtenBy(
    await directStatements(store).batch([
      change,
      Prisma.sql`INSERT INTO "Event" ("kind", "clientId", "operationId", "revision", "payload", "createdAt")
        SELECT ${event} FROM "Operation" WHERE "id" = ${operationId} AND changes() = 1`,
    ]),
  );
}

/** What the batch's first statement, `changeHeld`, returned. */
function writtenBy([changed]: BatchResult[]): OperationRow | undefined {
  return (changed as unknown as OperationRow[])[0];
}

/** Changes an operation while it is executing under `replica`, whatever revision progress has taken it to. */
function changeHeld(replica: string, operationId: string, change: Prisma.Sql, now: Date): Prisma.Sql {
  return Prisma.sql`UPDATE "Operation" SET ${change}, "revision" = "revision" + 1, "updatedAt" = ${now}
    WHERE "id" = ${operationId} AND "state" = 'executing' AND "claimedBy" = ${replica}
    RETURNING *`;
}
