import type { MessagePort } from "node:worker_threads";
import type { Error as DriverError, SqlResultSet } from "@prisma/driver-adapter-utils";

/*
 * The messages between the adapter (on the event loop) and the database thread. Every request carries an id the
 * reply repeats; the thread answers requests in the order it can serve them, not necessarily in the order sent.
 */

export interface ThreadOptions {
  /** The SQLite file. */
  file: string;
  /** How long a statement waits on a file another process is writing before failing with SQLITE_BUSY. */
  busyTimeoutMs: number;
  /** Run on the writer connection when it opens (PRAGMAs). */
  pragmas: string;
  /** Prepared statements kept per connection. */
  statementCacheSize: number;
}

export type Request =
  /**
   * A statement outside any transaction, or inside the one `transaction` names; `args` as better-sqlite3 binds them.
   * A transaction's first statement `begins` it: it waits for the writer to be free, so transactions never interleave.
   */
  | { id: number; kind: "query" | "execute"; sql: string; args: unknown[]; transaction?: number; begins?: true }
  | { id: number; kind: "script"; script: string }
  /**
   * Statements in a transaction of their own, all or nothing, in one round trip: for each, the rows it returns (a
   * query, or a write with RETURNING) or else the rows it changed.
   */
  | { id: number; kind: "batch"; statements: { sql: string; args: unknown[] }[] }
  /** Ends the transaction (or drops it, if its first statement is still waiting for the writer) and frees the writer. */
  | { id: number; kind: "commit" | "rollback"; transaction: number }
  | { id: number; kind: "close" };

export type Reply =
  | { id: number; value: SqlResultSet | number | (SqlResultSet | number)[] | undefined }
  | { id: number; failure: Failure }
  /** A transaction cannot begin yet: another one holds the writer. The real reply follows when it can. */
  | { id: number; queued: true };

/** What the thread gets at its start, besides the options. */
export interface ThreadChannel {
  /** Requests in, replies out. */
  port: MessagePort;
  /** Counts the replies sent, so the event loop can block on it (Atomics.wait) for one it cannot do without. */
  replies: Int32Array;
}

/** The first message from the thread: whether it could open the database. */
export type Opened = { opened: true } | { opened: false; failure: Failure };

/** A driver error Prisma knows how to map (constraint, busy, ...), or any other error by its name and message. */
export type Failure = { driver: DriverError } | { name: string; message: string };
