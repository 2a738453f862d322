import { workerData } from "node:worker_threads";
import type { SqlQuery, SqlResultSet } from "@prisma/driver-adapter-utils";
import Sqlite from "better-sqlite3";
import { Connection } from "./connection.js";
import { DriverFailure, failureOf } from "./driver-errors.js";
import type { Opened, Reply, Request, ThreadChannel, ThreadOptions } from "./protocol.js";

/*
 * The database thread: every better-sqlite3 call runs here, so a slow statement, a commit's fsync or a wait on a busy
 * file holds this thread, never the event loop. One writer connection runs one transaction at a time; statements that
 * only read and belong to no transaction go to a reader connection, which (WAL) sees the last commit and waits for
 * nothing. A write outside a transaction, a script or a new transaction waits, in arrival order, for the open one.
 */

const { options, channel } = workerData as { options: ThreadOptions; channel: ThreadChannel };
const { port, replies } = channel;
const begin: SqlQuery = { sql: "BEGIN IMMEDIATE", args: [], argTypes: [] };
const commit: SqlQuery = { sql: "COMMIT", args: [], argTypes: [] };
const rollback: SqlQuery = { sql: "ROLLBACK", args: [], argTypes: [] };

type WriterWork = Extract<Request, { kind: "query" | "execute" | "script" | "begin" }>;

class DatabaseThread {
  /** The transaction holding the writer, if any. */
  private owner: number | undefined;
  private lastTransaction = 0;
  private readonly waiting: WriterWork[] = [];

  constructor(
    private readonly writer: Connection,
    private readonly reader: Connection,
  ) {}

  handle(request: Request): void {
    switch (request.kind) {
      case "query":
      case "execute":
        if (request.transaction !== undefined) return this.answer(request.id, () => this.inTransaction(request));
        if (this.reader.readsOnly(request.statement.sql)) return this.answer(request.id, () => run(this.reader, request));
        return this.write(request);
      case "script":
      case "begin":
        return this.write(request);
      case "commit":
      case "rollback":
        return this.answer(request.id, () => this.end(request.transaction, request.kind === "commit"));
      case "close":
        this.reader.close();
        this.writer.close();
        reply({ id: request.id, value: undefined });
        port.close(); // nothing left to wait for: the thread ends
    }
  }

  private inTransaction(request: Extract<Request, { kind: "query" | "execute" }>) {
    if (request.transaction !== this.owner) throw transactionClosed();
    return run(this.writer, request);
  }

  private write(work: WriterWork): void {
    if (this.owner === undefined && this.waiting.length === 0) return this.run(work);
    this.waiting.push(work);
    // The event loop may be blocked waiting for this answer; it will not come until the writer is free.
    if (work.kind === "begin") reply({ id: work.id, queued: true });
  }

  private run(work: WriterWork): void {
    this.answer(work.id, () => {
      switch (work.kind) {
        case "query":
        case "execute":
          return run(this.writer, work);
        case "script":
          this.writer.database.exec(work.script);
          return undefined;
        case "begin":
          this.writer.execute(begin);
          this.owner = ++this.lastTransaction;
          return this.owner;
      }
    });
  }

  private end(transaction: number, commits: boolean): undefined {
    if (transaction !== this.owner) throw transactionClosed();
    try {
      if (commits) this.writer.execute(commit);
    } finally {
      // A failed COMMIT leaves the transaction open (and some errors have already rolled it back): either way the
      // next transaction must start outside it.
      if (this.writer.database.inTransaction) this.writer.execute(rollback);
      this.owner = undefined;
      while (this.owner === undefined && this.waiting.length > 0) this.run(this.waiting.shift()!);
    }
    return undefined;
  }

  private answer(id: number, work: () => SqlResultSet | number | undefined): void {
    let value: SqlResultSet | number | undefined;
    try {
      value = work();
    } catch (error) {
      return reply({ id, failure: failureOf(error) });
    }
    reply({ id, value });
  }
}

function reply(message: Reply | Opened): void {
  port.postMessage(message);
  Atomics.add(replies, 0, 1);
  Atomics.notify(replies, 0);
}

function run(connection: Connection, request: Extract<Request, { kind: "query" | "execute" }>): SqlResultSet | number {
  return request.kind === "query" ? connection.query(request.statement) : connection.execute(request.statement);
}

function transactionClosed(): Error {
  return new DriverFailure({ kind: "TransactionAlreadyClosed", cause: "the transaction has already ended" });
}

function connect(readonly: boolean): Connection {
  return new Connection(new Sqlite(options.file, { timeout: options.busyTimeoutMs, readonly }), options.statementCacheSize);
}

function open(): DatabaseThread {
  const writer = connect(false);
  writer.database.exec(options.pragmas);
  return new DatabaseThread(writer, connect(true));
}

try {
  const thread = open();
  port.on("message", (request: Request) => thread.handle(request));
  reply({ opened: true });
} catch (error) {
  reply({ opened: false, failure: failureOf(error) });
  port.close();
}
