import { workerData } from "node:worker_threads";
import type { SqlResultSet } from "@prisma/driver-adapter-utils";
import Sqlite from "better-sqlite3";
import { Connection } from "./connection.js";
import { DriverFailure, failureOf } from "./driver-errors.js";
import type { Opened, Reply, Request, ThreadChannel, ThreadOptions } from "./protocol.js";

/*
 * The database thread: every better-sqlite3 call runs here, so a slow statement, a commit's fsync or a wait on a busy
 * file holds this thread, never the event loop. One writer connection runs one transaction at a time; a statement that
 * only reads and belongs to no transaction runs on it too while it is free, else on a reader connection, which (WAL)
 * sees the last commit and waits for nothing. A write outside a transaction, a script or a new transaction waits, in arrival order, for the open one.
 */

const { options, channel } = workerData as { options: ThreadOptions; channel: ThreadChannel };
const { port, replies } = channel;

type Statement = Extract<Request, { kind: "query" | "execute" }>;
type WriterWork = Statement | Extract<Request, { kind: "script" | "batch" }>;

class DatabaseThread {
  /** The transaction holding the writer, if any. */
  private owner: number | undefined;
  private readonly waiting: WriterWork[] = [];

  constructor(
    private readonly writer: Connection,
    private readonly reader: Connection,
  ) {}

  handle(request: Request): void {
    switch (request.kind) {
      case "query":
      case "execute":
        if (request.begins) return this.write(request);
        if (request.transaction !== undefined) return this.answer(request.id, () => this.inTransaction(request));
        // A free writer answers reads too: its page cache holds what it wrote, where the reader's starts over after
        // every commit (WAL), re-reading the pages. The reader serves reads only while the writer is taken.
        if (this.writerFree() || !this.reader.readsOnly(request.sql)) return this.write(request);
        return this.answer(request.id, () => runStatement(this.reader, request));
      case "script":
      case "batch":
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

  private inTransaction(request: Statement) {
    if (request.transaction !== this.owner) throw transactionClosed();
    return runStatement(this.writer, request);
  }

  private writerFree(): boolean {
    return this.owner === undefined && this.waiting.length === 0;
  }

  private write(work: WriterWork): void {
    if (this.writerFree()) return this.run(work);
    this.waiting.push(work);
    // The event loop may be blocked waiting for a transaction's first answer; it will not come until the writer is free.
    if (isStatement(work) && work.begins) reply({ id: work.id, queued: true });
  }

  private run(work: WriterWork): void {
    this.answer(work.id, () => {
      if (work.kind === "script") {
        this.writer.database.exec(work.script);
        return undefined;
      }
      if (work.kind === "batch") return this.batch(work.statements);
      if (work.begins) {
        this.writer.execute("BEGIN IMMEDIATE");
        this.owner = work.transaction;
      }
      return runStatement(this.writer, work);
    });
  }

  private end(transaction: number, commits: boolean): undefined {
    if (transaction !== this.owner) return this.drop(transaction, commits);
    try {
      if (commits) this.writer.execute("COMMIT");
    } finally {
      // A failed COMMIT leaves the transaction open (and some errors have already rolled it back): either way the
      // next transaction must start outside it.
      if (this.writer.database.inTransaction) this.writer.execute("ROLLBACK");
      this.owner = undefined;
      while (this.owner === undefined && this.waiting.length > 0) this.run(this.waiting.shift()!);
    }
    return undefined;
  }

  /** Ends a transaction that does not hold the writer: its first statement may still be waiting for it (a timeout). */
  private drop(transaction: number, commits: boolean): undefined {
    const index = this.waiting.findIndex((work) => isStatement(work) && work.transaction === transaction);
    if (index >= 0) {
      const [first] = this.waiting.splice(index, 1);
      reply({ id: first!.id, failure: failureOf(transactionClosed()) });
    }
    // Rolling back what never began (its BEGIN failed) is nothing to do; committing it is an error.
    if (commits) throw transactionClosed();
    return undefined;
  }

  /** The writer is free (no transaction owns it): the whole batch runs before anything else can. */
  private batch(statements: { sql: string; args: unknown[] }[]): (SqlResultSet | number)[] {
    this.writer.execute("BEGIN IMMEDIATE");
    try {
      const changes = statements.map(({ sql, args }) => this.writer.run(sql, args));
      this.writer.execute("COMMIT");
      return changes;
    } finally {
      if (this.writer.database.inTransaction) this.writer.execute("ROLLBACK");
    }
  }

  private answer(id: number, work: () => SqlResultSet | number | (SqlResultSet | number)[] | undefined): void {
    let value: SqlResultSet | number | (SqlResultSet | number)[] | undefined;
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

function runStatement(connection: Connection, request: Statement): SqlResultSet | number {
  return request.kind === "query" ? connection.query(request.sql, request.args) : connection.execute(request.sql, request.args);
}

function isStatement(work: WriterWork): work is Statement {
  return work.kind === "query" || work.kind === "execute";
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
