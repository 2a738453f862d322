import Sqlite from "better-sqlite3";
import pg from "pg";
import { newId } from "../src/operations/lifecycle.js";
import { openDatabase, type Provider } from "../src/store/database.js";

/*
 * The baseline for the operations bench: what one accepted submit writes (the client's rate count upserted in its
 * ClientLoad row, one Operation, one Event, one AuditRecord row, in one transaction) and what one replay reads (the Operation by client and key),
 * as prepared raw SQL through the driver Axon's Prisma adapter uses: better-sqlite3 or pg. The rows are copies of
 * rows Axon wrote in the same run, with a new id, key and time, so both sides write the same bytes.
 */

type Row = Record<string, unknown>;

/** One submit's rows as Axon stored them. */
export interface SubmitRows {
  operation: Row;
  event: Row;
  audit: Row;
}

export interface RowCounts {
  operations: number;
  events: number;
  audits: number;
  /** The ClientLoad rows' rate-window counts, summed: submissions admitted in the current windows. */
  admitted: number;
}

export interface RawSubmitStore {
  /** What one new submit writes, in one transaction. */
  insert(clientId: string, idempotencyKey: string): Promise<void>;
  /** What one replay reads. */
  select(clientId: string, idempotencyKey: string): Promise<void>;
  counts(): Promise<RowCounts>;
  /** The settings that decide what a commit waits for (Axon's connections have the same ones). */
  durability(): Promise<string>;
  close(): Promise<void>;
}

/** The raw store's rate window; its count is not checked, only written as Axon writes it. */
const windowMs = 60_000;

/** Timestamps are set to the time of the write, as the broker sets them. */
const timeColumns = { operation: ["createdAt", "updatedAt", "terminalAt"], event: ["createdAt"], audit: ["at"] } as const;

const countSql = `SELECT (SELECT COUNT(*) FROM "Operation") AS operations, (SELECT COUNT(*) FROM "Event") AS events,
  (SELECT COUNT(*) FROM "AuditRecord") AS audits, (SELECT COALESCE(SUM("windowCount"), 0) FROM "ClientLoad") AS admitted`;

/** The first operation `clientId` submitted, with the event and audit record its submit wrote. */
export async function readSubmitRows(provider: Provider, databaseUrl: string, clientId: string): Promise<SubmitRows> {
  const queries = {
    operation: `SELECT * FROM "Operation" WHERE "clientId" = $1 ORDER BY "createdAt" LIMIT 1`,
    event: `SELECT * FROM "Event" WHERE "operationId" = $1`,
    audit: `SELECT * FROM "AuditRecord" WHERE "operationId" = $1`,
  };
  const read = provider === "sqlite" ? sqliteReader(databaseUrl) : await postgresReader(databaseUrl);
  try {
    const operation = await read.one(queries.operation, clientId);
    const id = operation.id as string;
    const { seq: _seq, ...event } = await read.one(queries.event, id);
    const { id: _id, ...audit } = await read.one(queries.audit, id);
    return { operation, event, audit };
  } finally {
    await read.close();
  }
}

/** Row counts of an Axon database (for checking that every accepted submit wrote its rows). */
export async function countRows(provider: Provider, databaseUrl: string): Promise<RowCounts> {
  const read = provider === "sqlite" ? sqliteReader(databaseUrl) : await postgresReader(databaseUrl);
  try {
    return toCounts(await read.one(countSql));
  } finally {
    await read.close();
  }
}

/**
 * For each operation of type `operation` that a worker claimed, the milliseconds from its approval (its creation, for
 * an operation the policy allowed) to its claim: both stamped by Axon's clock in the same process.
 */
export async function approvalToClaimMs(provider: Provider, databaseUrl: string, operation: string): Promise<number[]> {
  const delay =
    provider === "sqlite"
      ? `(julianday("claimedAt") - julianday("createdAt")) * 86400000`
      : `EXTRACT(EPOCH FROM ("claimedAt" - "createdAt")) * 1000`;
  const read = provider === "sqlite" ? sqliteReader(databaseUrl) : await postgresReader(databaseUrl);
  try {
    const rows = await read.all(`SELECT ${delay} AS ms FROM "Operation" WHERE "operation" = $1 AND "claimedAt" IS NOT NULL`, operation);
    return rows.map((row) => Number(row.ms)).sort((a, b) => a - b);
  } finally {
    await read.close();
  }
}

/** Migrates the (fresh) database as Axon does, then opens it with the bare driver. */
export async function openRawSubmitStore(provider: Provider, databaseUrl: string, rows: SubmitRows, poolSize: number): Promise<RawSubmitStore> {
  await (await openDatabase(databaseUrl)).close();
  return provider === "sqlite" ? sqliteStore(databaseUrl, rows) : postgresStore(databaseUrl, rows, poolSize);
}

interface Statements {
  counter: string;
  operation: string;
  event: string;
  audit: string;
  select: string;
}

function statements(rows: SubmitRows, placeholder: (index: number) => string): Statements {
  const insert = (table: string, row: Row) => {
    const columns = Object.keys(row);
    return `INSERT INTO "${table}" (${columns.map((column) => `"${column}"`).join(", ")}) VALUES (${columns.map((_, index) => placeholder(index + 1)).join(", ")})`;
  };
  return {
    counter:
      `INSERT INTO "ClientLoad" ("clientId", "windowStart", "windowCount") VALUES (${placeholder(1)}, ${placeholder(2)}, 1) ` +
      `ON CONFLICT ("clientId") DO UPDATE SET "windowCount" = CASE WHEN "ClientLoad"."windowStart" = excluded."windowStart" ` +
      `THEN "ClientLoad"."windowCount" + 1 ELSE 1 END, "windowStart" = excluded."windowStart"`,
    operation: insert("Operation", rows.operation),
    event: insert("Event", rows.event),
    audit: insert("AuditRecord", rows.audit),
    select: `SELECT * FROM "Operation" WHERE "clientId" = ${placeholder(1)} AND "idempotencyKey" = ${placeholder(2)}`,
  };
}

/** The values of one submit's rows: the template's, with this submit's id, client, key and time. */
function submitValues(rows: SubmitRows, clientId: string, idempotencyKey: string, time: (date: Date) => unknown, encode: (value: unknown) => unknown) {
  const now = new Date();
  const id = newId("op");
  const stamp = (row: Row, columns: readonly string[]) => {
    const copy: Row = { ...row };
    for (const column of columns) if (copy[column] !== null) copy[column] = time(now);
    return Object.values(copy).map(encode);
  };
  return {
    counter: [clientId, time(new Date(Math.floor(now.getTime() / windowMs) * windowMs))],
    operation: stamp({ ...rows.operation, id, clientId, idempotencyKey }, timeColumns.operation),
    event: stamp({ ...rows.event, clientId, operationId: id }, timeColumns.event),
    audit: stamp({ ...rows.audit, actor: clientId, operationId: id }, timeColumns.audit),
  };
}

function sqliteFile(databaseUrl: string): string {
  return databaseUrl.slice("file:".length).split("?")[0]!;
}

function sqliteReader(databaseUrl: string) {
  const db = new Sqlite(sqliteFile(databaseUrl), { readonly: true });
  return {
    one: async (sql: string, ...params: unknown[]) => {
      const row = db.prepare(sql.replace(/\$\d+/g, "?")).get(...params) as Row | undefined;
      if (!row) throw new Error(`no row for ${sql}`);
      return row;
    },
    all: async (sql: string, ...params: unknown[]) => db.prepare(sql.replace(/\$\d+/g, "?")).all(...params) as Row[],
    close: async () => void db.close(),
  };
}

async function postgresReader(databaseUrl: string) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  return {
    one: async (sql: string, ...params: unknown[]) => {
      const row = (await client.query<Row>(sql, params)).rows[0];
      if (!row) throw new Error(`no row for ${sql}`);
      return row;
    },
    all: async (sql: string, ...params: unknown[]) => (await client.query<Row>(sql, params)).rows,
    close: () => client.end(),
  };
}

function toCounts(row: Row): RowCounts {
  return { operations: Number(row.operations), events: Number(row.events), audits: Number(row.audits), admitted: Number(row.admitted) };
}

/** The same connection settings as Axon's (src/store/database.ts): WAL, foreign keys on, a 5 s busy timeout. */
function sqliteStore(databaseUrl: string, rows: SubmitRows): RawSubmitStore {
  const db = new Sqlite(sqliteFile(databaseUrl), { timeout: 5_000 });
  db.exec("PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON;");
  const sql = statements(rows, () => "?");
  const prepared = {
    counter: db.prepare(sql.counter),
    operation: db.prepare(sql.operation),
    event: db.prepare(sql.event),
    audit: db.prepare(sql.audit),
    select: db.prepare(sql.select),
    counts: db.prepare(countSql),
  };
  // Prisma stores SQLite DateTime as ISO 8601 with an explicit offset; JSON columns hold the JSON text as read.
  const time = (date: Date) => date.toISOString().replace("Z", "+00:00");
  // A deferred BEGIN, as Prisma's SQLite transactions use.
  const write = db.transaction((values: ReturnType<typeof submitValues>) => {
    prepared.counter.run(...values.counter);
    prepared.operation.run(...values.operation);
    prepared.event.run(...values.event);
    prepared.audit.run(...values.audit);
  });
  return {
    insert: async (clientId, key) => void write(submitValues(rows, clientId, key, time, (value) => value)),
    select: async (clientId, key) => {
      if (!prepared.select.get(clientId, key)) throw new Error(`no operation with key ${key}`);
    },
    counts: async () => toCounts(prepared.counts.get() as Row),
    durability: async () => {
      const synchronous = ["OFF", "NORMAL", "FULL", "EXTRA"][db.pragma("synchronous", { simple: true }) as number];
      return `SQLite ${db.prepare("SELECT sqlite_version() AS version").pluck().get() as string}, journal_mode=${db.pragma("journal_mode", { simple: true }) as string}, synchronous=${synchronous}`;
    },
    close: async () => void db.close(),
  };
}

/** A pool as large as the load's concurrency; every statement is a named (server-side prepared) statement. */
function postgresStore(databaseUrl: string, rows: SubmitRows, poolSize: number): RawSubmitStore {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: poolSize });
  // `pool.end()` resolves before its connections have closed, so dropping the database WITH (FORCE) right after
  // can terminate one that is still closing; that is the end of the run, not a failure of it.
  pool.on("error", () => undefined);
  const sql = statements(rows, (index) => `$${index}`);
  // pg sends Dates in the local zone; Prisma writes UTC, so the bench sends the UTC ISO text. JSON goes as text.
  const time = (date: Date) => date.toISOString();
  const encode = (value: unknown) => (value !== null && typeof value === "object" && !(value instanceof Date) ? JSON.stringify(value) : value);
  return {
    insert: async (clientId, key) => {
      const values = submitValues(rows, clientId, key, time, encode);
      const client = await pool.connect();
      try {
        await client.query("BEGIN");
        await client.query({ name: "bench-counter", text: sql.counter, values: values.counter });
        await client.query({ name: "bench-operation", text: sql.operation, values: values.operation });
        await client.query({ name: "bench-event", text: sql.event, values: values.event });
        await client.query({ name: "bench-audit", text: sql.audit, values: values.audit });
        await client.query("COMMIT");
      } catch (error) {
        await client.query("ROLLBACK").catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
    },
    select: async (clientId, key) => {
      const found = await pool.query({ name: "bench-select", text: sql.select, values: [clientId, key] });
      if (found.rowCount !== 1) throw new Error(`no operation with key ${key}`);
    },
    counts: async () => toCounts((await pool.query<Row>(countSql)).rows[0]!),
    durability: async () => {
      const setting = async (name: string) => (await pool.query<{ setting: string }>("SELECT current_setting($1) AS setting", [name])).rows[0]!.setting;
      const version = (await setting("server_version")).split(" ")[0];
      return `PostgreSQL ${version}, fsync=${await setting("fsync")}, synchronous_commit=${await setting("synchronous_commit")}, wal_sync_method=${await setting("wal_sync_method")}`;
    },
    close: () => pool.end(),
  };
}
