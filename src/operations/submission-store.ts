import type { JsonObject } from "@bufbuild/protobuf";
import { Prisma } from "../store/database.js";
import { isUniqueViolation } from "../store/storage-errors.js";
import type { AdmissionCounts, ClientLimits, GlobalLimits } from "./admission.js";
import { dialects, type Dialect } from "./sql-dialect.js";
import { directStatements, queryRows, type GrantRow, type OperationRow, type StoreClient, type StoreTransaction } from "./store.js";

/**
 * Writing an admitted submission (spec §4, §5): the replay read of its idempotency key, the admission check, the rate
 * count, the operation, its approval or its window grant's use, its event and audit records, all or nothing, and
 * nothing but the read when the key already names an operation. On PostgreSQL that is one statement, so the load rows
 * it locks (the client's, then the server's) are held for that statement and its commit only, never across a round
 * trip; on SQLite, whose one writer serializes everything, one batch of statements in one transaction.
 */

/** What admission holds a submission to (the client's effective limits), in the rate window `windowStart` opens. */
export type SubmissionLimits = ClientLimits & GlobalLimits & { windowStart: Date };

/** The rows a submission writes, decided beforehand (policy, presentation); the store only admits and writes them. */
export interface PlannedSubmission {
  operation: Omit<OperationRow, "result" | "recoveredBy">;
  /** A request: the pending approval created with the operation. */
  approval?: Omit<GrantRow, "clientRequestId" | "requestHash" | "decidedBy" | "decisionReason" | "usedCount">;
  /** A matching window grant, as the policy saw it: one of its uses is taken, or nothing is written. */
  windowGrant?: { id: string; revision: number };
  /** The event's kind, and the audit record's category and detail. */
  kind: string;
  category: string | null;
  detail: JsonObject;
  limits: SubmissionLimits;
}

export type SubmissionOutcome =
  | { kind: "created" }
  /** The client's idempotency key already names `operation`, as it stands: nothing was written. */
  | { kind: "existing"; operation: OperationRow }
  /** The idempotency key was taken meanwhile by a concurrent submission; nothing was written. */
  | { kind: "duplicate" }
  /**
   * Nothing was written: admission refused (`counts`, the counts it decided on, show why) or, when they admit it,
   * something changed meanwhile (the window grant's last use went elsewhere, a first submission raced another).
   */
  | { kind: "not_written"; counts: AdmissionCounts };

export async function writeSubmission(store: StoreClient, plan: PlannedSubmission): Promise<SubmissionOutcome> {
  try {
    return store.provider === "postgresql" ? await writeInOneStatement(store, plan) : await writeInOneBatch(store, plan);
  } catch (error) {
    if (isUniqueViolation(error)) return { kind: "duplicate" };
    throw error;
  }
}

/** The five counts admission decides on (see `admit`), as the load rows stand for this client now. */
export async function readAdmissionCounts(store: StoreClient, tx: StoreTransaction, clientId: string, windowStart: Date): Promise<AdmissionCounts> {
  const [row] = await tx.$queryRaw<CountsRow[]>`${currentCounts(dialects[store.provider], clientId, windowStart)}`;
  return toCounts(row!);
}

/**
 * Takes one slot of the client's rate window in one statement, if admission allows it; false when it refuses. The
 * client's load row stays locked to the end of the transaction, so what the transaction then adds to its counts is
 * exact. The server-wide counts are only read: on PostgreSQL this is for what adds no active operation (an explicit
 * grant request); on SQLite, whose one writer serializes transactions, the read is exact too.
 */
export async function admitClient(store: StoreClient, tx: StoreTransaction, clientId: string, limits: SubmissionLimits): Promise<boolean> {
  const dialect = dialects[store.provider];
  const counts = Prisma.sql`(${currentCounts(dialect, clientId, limits.windowStart)}) AS counts`;
  const counted = await tx.$executeRaw`${countInWindow(dialect, clientId, limits, counts, admitted(limits), true)}`;
  return counted === 1;
}

function currentCounts(dialect: Dialect, clientId: string, windowStart: Date): Prisma.Sql {
  return Prisma.sql`SELECT ${countsColumns(dialect, Prisma.sql`"ClientLoad"`, windowStart, Prisma.sql`(SELECT "active" FROM "GlobalLoad" WHERE "id" = 1)`)}
    FROM (SELECT 1) AS one LEFT JOIN "ClientLoad" ON "ClientLoad"."clientId" = ${clientId}`;
}

type CountsRow = Record<keyof AdmissionCounts, number | bigint | null>;

function toCounts(row: CountsRow): AdmissionCounts {
  return {
    clientRequestsInWindow: Number(row.clientRequestsInWindow),
    clientActive: Number(row.clientActive),
    clientPending: Number(row.clientPending),
    globalActive: Number(row.globalActive),
    globalExecuting: Number(row.globalExecuting),
  };
}

/** The counts as columns, from a relation holding the client's load row (or nulls: no row yet) and the global one. */
function countsColumns(dialect: Dialect, client: Prisma.Sql, windowStart: Date, globalActive: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`
    COALESCE(CASE WHEN ${client}."windowStart" = ${dialect.time(windowStart)} THEN ${client}."windowCount" END, 0) AS "clientRequestsInWindow",
    COALESCE(${client}."active", 0) AS "clientActive",
    COALESCE(${client}."pending", 0) AS "clientPending",
    ${globalActive} AS "globalActive",
    (SELECT count(*) FROM "Operation" WHERE "state" = 'executing') AS "globalExecuting"`;
}

/** `admit` (src/operations/admission.ts) in SQL, over a relation with the count columns: every count below its limit. */
function admitted(limits: SubmissionLimits): Prisma.Sql {
  return Prisma.sql`"clientRequestsInWindow" < ${limits.requestsPerWindow} AND "clientActive" < ${limits.clientActive}
    AND "clientPending" < ${limits.clientPending} AND "globalActive" < ${limits.globalActive} AND "globalExecuting" < ${limits.globalExecuting}`;
}

/**
 * Counts one submission in the client's rate window (inserting the client's load row, or bumping it) from `from`
 * where `condition` holds. With `recheck`, the conflict branch checks the client's limits again on its latest row:
 * where the statement itself decides admission, a client's first submission may race another for the insert.
 */
function countInWindow(dialect: Dialect, clientId: string, limits: SubmissionLimits, from: Prisma.Sql, condition: Prisma.Sql, recheck: boolean): Prisma.Sql {
  const limited = Prisma.sql`WHERE (load."windowStart" IS DISTINCT FROM excluded."windowStart" OR load."windowCount" < ${limits.requestsPerWindow})
      AND load."active" < ${limits.clientActive} AND load."pending" < ${limits.clientPending}`;
  return Prisma.sql`INSERT INTO "ClientLoad" AS load ("clientId", "windowStart", "windowCount")
    SELECT ${clientId}, ${dialect.time(limits.windowStart)}, 1 FROM ${from} WHERE ${condition}
    ON CONFLICT ("clientId") DO UPDATE SET
      "windowCount" = CASE WHEN load."windowStart" = excluded."windowStart" THEN load."windowCount" + 1 ELSE 1 END,
      "windowStart" = excluded."windowStart"
    ${recheck ? limited : Prisma.empty}`;
}

// ---- PostgreSQL: one statement ---------------------------------------------------------------------------------

/**
 * The client's load row is locked first, then (only for an operation that will be active) the server's: the order
 * the counting triggers take them in, so that a submission and a state change never deadlock. FOR UPDATE returns
 * the rows as the last committed change left them, so the counts are exact across replicas. A refusal writes
 * nothing; a duplicate key fails the statement (unique violation), which undoes the rest of it. A client's very
 * first statement, finding no load row to lock, only creates it and writes nothing else (the submission is decided
 * again): locking the server's row before a client row it then inserts would be the opposite order.
 */
async function writeInOneStatement(store: StoreClient, plan: PlannedSubmission): Promise<SubmissionOutcome> {
  const [row] = await store.$queryRaw<StatementRow[]>`${submissionStatement(plan)}`;
  const { clientRequestsInWindow: _window, clientActive: _active, clientPending: _pending, globalActive: _global, globalExecuting: _executing, created, ...existing } = row!;
  if (existing.id !== null) return { kind: "existing", operation: existing as OperationRow };
  return created === 1 ? { kind: "created" } : { kind: "not_written", counts: toCounts(row!) };
}

/** The statement's one row: the counts, whether it wrote, and the operation the key named before (all null if none). */
type StatementRow = CountsRow & { created: number } & { [Column in keyof OperationRow]: OperationRow[Column] | null };

/**
 * The one PostgreSQL statement of `writeSubmission`: one row, the counts it decided on (null before the client's
 * first submission, or when the key is taken), whether it wrote (`created`), and the columns of the operation the
 * idempotency key already named (null if none). A taken key locks no row and writes nothing: a replay is a read.
 */
export function submissionStatement(plan: PlannedSubmission): Prisma.Sql {
  const { operation: op, approval, windowGrant, limits } = plan;
  const sql = dialects.postgresql;
  const now = op.createdAt;
  const occupies = op.state !== "denied";
  const use = windowGrant === undefined ? Prisma.empty : Prisma.sql`
    used AS (
      ${takeWindowGrantUse(sql, windowGrant.id, now)} AND EXISTS (SELECT 1 FROM counts WHERE ${admitted(limits)})
      RETURNING "usesRemaining"
    ),`;
  const onlyIfUsed = windowGrant === undefined ? Prisma.empty : Prisma.sql`AND EXISTS (SELECT 1 FROM used)`;
  const approvalInsert = approval === undefined ? Prisma.empty : Prisma.sql`
    approval AS (INSERT INTO "Grant" (${grantColumns.names}) SELECT ${grantColumns.values(sql, approval)} FROM counted),`;
  const grantUsedAudit = windowGrant === undefined ? Prisma.empty : Prisma.sql`
    UNION ALL SELECT ${op.clientId}, 'client', 'grant.used', NULL, NULL, ${windowGrant.id},
      jsonb_build_object('uses_remaining', "usesRemaining"), ${sql.time(now)} FROM used, operation`;

  return Prisma.sql`
    WITH existing AS (
      ${keyed(op)}
    ), client_row AS (
      SELECT "windowStart", "windowCount", "active", "pending" FROM "ClientLoad"
      WHERE "clientId" = ${op.clientId} AND NOT EXISTS (SELECT 1 FROM existing) FOR UPDATE
    ), new_client AS (
      INSERT INTO "ClientLoad" ("clientId") SELECT ${op.clientId}
      WHERE NOT EXISTS (SELECT 1 FROM client_row) AND NOT EXISTS (SELECT 1 FROM existing) ON CONFLICT DO NOTHING
    ), global_row AS (
      SELECT "active" FROM "GlobalLoad" WHERE "id" = 1 AND EXISTS (SELECT 1 FROM client_row) ${occupies ? Prisma.sql`FOR UPDATE` : Prisma.empty}
    ), counts AS (
      SELECT ${countsColumns(sql, Prisma.sql`client_row`, limits.windowStart, Prisma.sql`(SELECT "active" FROM global_row)`)} FROM client_row
    ), ${use} counted AS (
      UPDATE "ClientLoad" SET
        "windowCount" = CASE WHEN "windowStart" = ${sql.time(limits.windowStart)} THEN "windowCount" + 1 ELSE 1 END,
        "windowStart" = ${sql.time(limits.windowStart)}
      WHERE "clientId" = ${op.clientId} AND EXISTS (SELECT 1 FROM counts WHERE ${admitted(limits)}) ${onlyIfUsed}
      RETURNING 1
    ), operation AS (
      INSERT INTO "Operation" (${operationColumns.names}) SELECT ${operationColumns.values(sql, op)} FROM counted
      RETURNING "id"
    ), ${approvalInsert} event AS (
      INSERT INTO "Event" ("kind", "clientId", "operationId", "grantId", "revision", "payload", "createdAt")
      SELECT ${plan.kind}, ${op.clientId}, "id", ${op.approvalId}, 1, ${sql.json({ state: op.state })}, ${sql.time(now)} FROM operation
    ), audit AS (
      INSERT INTO "AuditRecord" ("actor", "actorKind", "action", "category", "operationId", "grantId", "detail", "at")
      SELECT ${op.clientId}, 'client', ${plan.kind}, ${plan.category}, "id", ${op.approvalId}, ${sql.json(auditDetail(plan))}, ${sql.time(now)} FROM operation
      ${grantUsedAudit}
    )
    SELECT ${countsNames}, (SELECT count(*)::int FROM operation) AS "created", ${storedOperationColumns}
    FROM (SELECT 1) AS one LEFT JOIN counts ON true LEFT JOIN existing ON true`;
}

// ---- SQLite: one batch ------------------------------------------------------------------------------------------

/**
 * The statements go in one batch: one message to the database thread, which runs them in one transaction of their
 * own, past Prisma's query interpreter (most of a statement's CPU through Prisma). SQLite's one writer makes the
 * counts each reads exact. The key is read first, on its own (a free writer answers it from its cache): a replay is
 * then that one read, not a transaction. The operation row goes in only if admission allows it (and, with a window
 * grant, only if this batch took one of its uses, by a compare-and-swap on the revision the policy saw); every other
 * row goes in only if the operation row did. A duplicate key (a concurrent submission's) fails the batch, which undoes
 * the rest of it.
 */
async function writeInOneBatch(store: StoreClient, plan: PlannedSubmission): Promise<SubmissionOutcome> {
  const { operation: op, approval, windowGrant, limits } = plan;
  const [existing] = await queryRows<OperationRow>(store, keyed(op));
  if (existing) return { kind: "existing", operation: existing };
  const sql = dialects.sqlite;
  const now = op.createdAt;
  const written = Prisma.sql`EXISTS (SELECT 1 FROM "Operation" WHERE "id" = ${op.id})`;
  // The statement before took the use, or not: its own count says so (the grant's revision may have moved on by
  // another writer's change to exactly the one a taken use gives it).
  const used = windowGrant === undefined ? Prisma.empty : Prisma.sql`AND changes() = 1`;
  const grantUsedAudit =
    windowGrant === undefined
      ? Prisma.empty
      : Prisma.sql`UNION ALL SELECT ${op.clientId}, 'client', 'grant.used', NULL, NULL, ${windowGrant.id}, json_object('uses_remaining', "usesRemaining"), ${now}
          FROM "Grant" WHERE "id" = ${windowGrant.id} AND ${written}`;
  const statements = [
    ...(windowGrant === undefined
      ? []
      : [
          Prisma.sql`${takeWindowGrantUse(sql, windowGrant.id, now)} AND "revision" = ${windowGrant.revision}
            AND EXISTS (SELECT 1 FROM (${currentCounts(sql, op.clientId, limits.windowStart)}) WHERE ${admitted(limits)})`,
        ]),
    Prisma.sql`INSERT INTO "Operation" (${operationColumns.names}) SELECT ${operationColumns.values(sql, op)}
      FROM (${currentCounts(sql, op.clientId, limits.windowStart)}) WHERE ${admitted(limits)} ${used}`,
    countInWindow(sql, op.clientId, limits, Prisma.sql`(SELECT 1) AS one`, written, false),
    ...(approval ? [Prisma.sql`INSERT INTO "Grant" (${grantColumns.names}) SELECT ${grantColumns.values(sql, approval)} WHERE ${written}`] : []),
    Prisma.sql`INSERT INTO "Event" ("kind", "clientId", "operationId", "grantId", "revision", "payload", "createdAt")
      SELECT ${plan.kind}, ${op.clientId}, ${op.id}, ${op.approvalId}, 1, ${sql.json({ state: op.state })}, ${now} WHERE ${written}`,
    Prisma.sql`INSERT INTO "AuditRecord" ("actor", "actorKind", "action", "category", "operationId", "grantId", "detail", "at")
      SELECT ${op.clientId}, 'client', ${plan.kind}, ${plan.category}, ${op.id}, ${op.approvalId}, ${sql.json(auditDetail(plan))}, ${now} WHERE ${written}
      ${grantUsedAudit}`,
  ];
  const changed = await directStatements(store).batch(statements);
  if (changed[windowGrant === undefined ? 0 : 1] === 1) return { kind: "created" };
  return { kind: "not_written", counts: await readAdmissionCounts(store, store, op.clientId, limits.windowStart) };
}

/** The operation the submission's idempotency key names, if any: its replay. */
function keyed(op: PlannedSubmission["operation"]): Prisma.Sql {
  return Prisma.sql`SELECT ${storedOperationColumns} FROM "Operation"
    WHERE "clientId" = ${op.clientId} AND "idempotencyKey" = ${op.idempotencyKey}`;
}

// ---- rows --------------------------------------------------------------------------------------------------------

/** One use of an active, unexpired window grant, taken by a compare-and-swap on what is left of it. */
function takeWindowGrantUse(dialect: Dialect, grantId: string, now: Date): Prisma.Sql {
  return Prisma.sql`UPDATE "Grant" SET
      "usesRemaining" = "usesRemaining" - 1, "usedCount" = "usedCount" + 1,
      "status" = CASE WHEN "usesRemaining" = 1 THEN 'consumed' ELSE 'active' END,
      "revision" = "revision" + 1, "updatedAt" = ${dialect.time(now)}
    WHERE "id" = ${grantId} AND "status" = 'active' AND "usesRemaining" > 0 AND ("expiresAt" IS NULL OR "expiresAt" > ${dialect.time(now)})`;
}

/** How each written column's value is sent: as it is, or through the dialect (casts on PostgreSQL, text on SQLite). */
type ColumnKind = "value" | "json" | "int" | "time";

/** Every column of a row type, in order, with its kind: the column list and the values follow from this one list. */
function columnsOf<Row>(kinds: { [Column in keyof Row]-?: ColumnKind }) {
  const columns = Object.keys(kinds) as (keyof Row & string)[];
  return {
    names: Prisma.raw(columns.map((column) => `"${column}"`).join(", ")),
    values: (dialect: Dialect, row: Row) =>
      Prisma.join(
        columns.map((column) => {
          const value = row[column] as never;
          const kind = kinds[column];
          return kind === "json" ? dialect.json(value) : kind === "int" ? dialect.int(value) : kind === "time" ? dialect.time(value) : value;
        }),
      ),
  };
}

const operationColumns = columnsOf<PlannedSubmission["operation"]>({
  id: "value",
  clientId: "value",
  idempotencyKey: "value",
  requestHash: "value",
  operation: "value",
  target: "json",
  arguments: "json",
  reason: "value",
  state: "value",
  revision: "int",
  presentationTitle: "value",
  presentationSummary: "value",
  approvalId: "value",
  errorCode: "value",
  errorMessage: "value",
  createdAt: "time",
  updatedAt: "time",
  terminalAt: "time",
  traceContext: "value",
  claimedBy: "value",
  claimedAt: "time",
});

const grantColumns = columnsOf<NonNullable<PlannedSubmission["approval"]>>({
  id: "value",
  revision: "int",
  clientId: "value",
  status: "value",
  operation: "value",
  target: "json",
  reason: "value",
  mode: "value",
  minutes: "int",
  maxUses: "int",
  usesRemaining: "int",
  expiresAt: "time",
  operationId: "value",
  createdAt: "time",
  updatedAt: "time",
});

/** Every column of an operation row, named (a prepared statement's columns must not change with the table's). */
const storedOperationColumns = Prisma.raw(`${operationColumns.names.text}, "result", "recoveredBy"`);
const countsNames = Prisma.raw(`"clientRequestsInWindow", "clientActive", "clientPending", "globalActive", "globalExecuting"`);

function auditDetail(plan: PlannedSubmission): JsonObject {
  return { state: plan.operation.state, revision: 1, ...plan.detail };
}
