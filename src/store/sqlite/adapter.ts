import {
  DriverAdapterError,
  type IsolationLevel,
  type SqlDriverAdapter,
  type SqlDriverAdapterFactory,
  type SqlQuery,
  type SqlResultSet,
  type Transaction,
} from "@prisma/driver-adapter-utils";
import { DatabaseThread } from "./database-thread.js";
import type { ThreadOptions } from "./protocol.js";
import { objectsOf, toSqlite } from "./values.js";

export interface SqliteThreadOptions {
  /** The SQLite file. */
  file: string;
  busyTimeoutMs: number;
  /** Run on the writing connection when it opens: the PRAGMAs every connection needs. */
  pragmas?: string;
  /** Prepared statements kept per connection (default 256). */
  statementCacheSize?: number;
  /**
   * How long the event loop may block waiting for the reply to one statement of a transaction (default 2 ms; the
   * first also waits for the writer). A transaction holds the one writer, so a step that waited for a turn of a busy
   * loop would hold up every other writer with it; past this bound the step goes on without blocking.
   */
  transactionStepMaxBlockMs?: number;
  /** The thread's JavaScript heap limit (default Node's): rows past it end the thread, not the process. */
  heapLimitMb?: number;
  /** Told when a database thread dies without being closed; the next request starts a new one. */
  onThreadExit?: (error: Error) => void;
}

const adapterName = "axon-sqlite-thread";

/** A statement as `Prisma.sql` builds it: SQLite's `?` placeholders and their values. */
export interface RawStatement {
  sql: string;
  values: unknown[];
}

/** One statement's part of a batch's answer: its rows, or the number of rows it changed. */
export type BatchResult = number | Record<string, unknown>[];

/**
 * Statements sent to the database thread past Prisma's query interpreter, which costs several times what SQLite
 * does: for the few hot paths where that matters. Values and rows as Prisma's raw queries give and take them.
 */
export interface DirectStatements {
  /** One statement outside any transaction: its rows as objects (date-times as Dates, JSON parsed). */
  query<T>(statement: RawStatement): Promise<T[]>;
  /**
   * Statements in one transaction of their own, all or nothing, in one round trip: for each, the rows it returns (a
   * query, or a write with RETURNING) as `query` gives them, or else the number of rows it changed.
   */
  batch(statements: RawStatement[]): Promise<BatchResult[]>;
}

/**
 * A Prisma driver adapter for SQLite whose connections live in a worker thread running better-sqlite3, so the event
 * loop only sends statements and receives rows (see thread-main.ts for how the thread serializes transactions).
 */
export class PrismaSqliteThread implements SqlDriverAdapterFactory, DirectStatements {
  readonly provider = "sqlite";
  readonly adapterName = adapterName;
  /** The adapter Prisma connected last: direct statements share its thread, so its writer serializes them too. */
  private connected: Promise<SqliteThreadAdapter> | undefined;

  constructor(private readonly settings: SqliteThreadOptions) {}

  connect(): Promise<SqlDriverAdapter> {
    const { file, busyTimeoutMs, pragmas = "", statementCacheSize = 256, heapLimitMb, onThreadExit } = this.settings;
    const options: ThreadOptions = { file, busyTimeoutMs, pragmas, statementCacheSize };
    const blockMs = this.settings.transactionStepMaxBlockMs ?? 2;
    this.connected = SqliteThreadAdapter.open(() => DatabaseThread.start(options, { heapLimitMb, onUnexpectedExit: onThreadExit }), blockMs);
    return this.connected;
  }

  async query<T>(statement: RawStatement): Promise<T[]> {
    return objectsOf<T>(await (await this.adapter()).queryRaw({ sql: statement.sql, args: statement.values, argTypes: [] }));
  }

  async batch(statements: RawStatement[]): Promise<BatchResult[]> {
    const results = await (await this.adapter()).batch(statements);
    return results.map((result) => (typeof result === "number" ? result : objectsOf(result)));
  }

  private adapter(): Promise<SqliteThreadAdapter> {
    return this.connected ?? Promise.reject(new DriverAdapterError({ kind: "ConnectionClosed" }));
  }
}

abstract class ThreadQueryable {
  readonly provider = "sqlite";
  readonly adapterName = adapterName;

  protected abstract send<T>(kind: "query" | "execute", statement: SqlQuery): Promise<T>;

  queryRaw(query: SqlQuery): Promise<SqlResultSet> {
    return this.send("query", query);
  }

  executeRaw(query: SqlQuery): Promise<number> {
    return this.send("execute", query);
  }
}

class SqliteThreadAdapter extends ThreadQueryable implements SqlDriverAdapter {
  private restarting: Promise<DatabaseThread> | undefined;
  private disposed = false;
  private lastTransaction = 0;

  static async open(startThread: () => Promise<DatabaseThread>, blockMs: number): Promise<SqliteThreadAdapter> {
    return new SqliteThreadAdapter(await startThread(), startThread, blockMs);
  }

  private constructor(
    private thread: DatabaseThread,
    private readonly startThread: () => Promise<DatabaseThread>,
    private readonly blockMs: number,
  ) {
    super();
  }

  protected async send<T>(kind: "query" | "execute", statement: SqlQuery): Promise<T> {
    return (await this.current()).request<T>({ kind, sql: statement.sql, args: toSqlite(statement) });
  }

  async executeScript(script: string): Promise<void> {
    await (await this.current()).request({ kind: "script", script });
  }

  async batch(statements: RawStatement[]): Promise<(SqlResultSet | number)[]> {
    const sqlite = statements.map(({ sql, values }) => ({ sql, args: toSqlite({ sql, args: values, argTypes: [] }) }));
    return (await this.current()).request({ kind: "batch", statements: sqlite });
  }

  async startTransaction(isolationLevel?: IsolationLevel): Promise<Transaction> {
    // SQLite's transactions are serializable, and only that.
    if (isolationLevel !== undefined && isolationLevel !== "SERIALIZABLE") throw new DriverAdapterError({ kind: "InvalidIsolationLevel", level: isolationLevel });
    // Nothing to ask the thread yet: the first statement begins the transaction, which saves a round trip.
    return new SqliteThreadTransaction(await this.current(), ++this.lastTransaction, this.blockMs);
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    await Promise.all([this.thread.close(), this.restarting?.then((thread) => thread.close(), () => undefined)]);
  }

  /** The running thread, or a new one if it died: a crash costs the requests in flight, not the database. */
  private async current(): Promise<DatabaseThread> {
    if (this.thread.alive) return this.thread;
    if (this.disposed) throw new DriverAdapterError({ kind: "ConnectionClosed" });
    this.restarting ??= this.startThread().finally(() => (this.restarting = undefined));
    this.thread = await this.restarting;
    return this.thread;
  }
}

class SqliteThreadTransaction extends ThreadQueryable implements Transaction {
  // The thread runs COMMIT and ROLLBACK itself, with the release of the writer, in one round trip.
  readonly options = { usePhantomQuery: true };
  private begun = false;

  constructor(
    private readonly thread: DatabaseThread,
    private readonly transaction: number,
    private readonly blockMs: number,
  ) {
    super();
  }

  protected send<T>(kind: "query" | "execute", statement: SqlQuery): Promise<T> {
    const request = { kind, sql: statement.sql, args: toSqlite(statement), transaction: this.transaction };
    if (this.begun) return this.thread.request<T>(request, this.blockMs);
    this.begun = true;
    return this.thread.request<T>({ ...request, begins: true }, this.blockMs);
  }

  async commit(): Promise<void> {
    if (this.begun) await this.thread.request({ kind: "commit", transaction: this.transaction });
  }

  async rollback(): Promise<void> {
    if (this.begun) await this.thread.request({ kind: "rollback", transaction: this.transaction });
  }

  async createSavepoint(name: string): Promise<void> {
    await this.executeRaw({ sql: `SAVEPOINT ${name}`, args: [], argTypes: [] });
  }

  async rollbackToSavepoint(name: string): Promise<void> {
    await this.executeRaw({ sql: `ROLLBACK TO ${name}`, args: [], argTypes: [] });
  }

  async releaseSavepoint(name: string): Promise<void> {
    await this.executeRaw({ sql: `RELEASE SAVEPOINT ${name}`, args: [], argTypes: [] });
  }
}
