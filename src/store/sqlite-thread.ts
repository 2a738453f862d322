import { mkdirSync } from "node:fs";
import path from "node:path";
import type { SqlDriverAdapter, SqlDriverAdapterFactory } from "@prisma/driver-adapter-utils";
import type { OpenDatabaseOptions } from "./database.js";
import { PrismaSqliteThread } from "./sqlite/adapter.js";

/** Waits this long on a locked SQLite file (another connection writing) before failing. */
export const sqliteBusyTimeoutMs = 5_000;

/**
 * Every SQLite connection that writes: WAL, so readers never wait for the writer (a property of the file, set again
 * harmlessly), and foreign keys enforced, which SQLite leaves off per connection.
 */
export const sqlitePragmas = "PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON;";

/** The SQLite file a `file:` URL names, its folder made. */
export function sqliteFile(databaseUrl: string): string {
  const [location = ""] = databaseUrl.slice("file:".length).split("?");
  // Every connection to ":memory:" is a new database: the migrated one would not be the one the client sees.
  if (location === "" || location === ":memory:") throw new Error("DATABASE_URL must name an SQLite file (file:<path>)");
  const file = path.resolve(location);
  mkdirSync(path.dirname(file), { recursive: true });
  return file;
}

/** A thread startSqliteThread started, until openDatabase takes it. */
let startedAhead: { file: string; thread: PrismaSqliteThread; connecting: Promise<SqlDriverAdapter> } | undefined;

/**
 * Starts the database thread for an SQLite URL now, for the next openDatabase of that URL to use; nothing for other
 * URLs. main.ts calls it before loading the rest of Axon, so that the thread boots on another core meanwhile instead of
 * on the critical path (about a tenth of a start). The thread only opens the file: migrations still come first.
 */
export function startSqliteThread(databaseUrl: string, logger: OpenDatabaseOptions["logger"]): void {
  if (!databaseUrl.startsWith("file:")) return;
  let file: string;
  try {
    file = sqliteFile(databaseUrl);
  } catch {
    return; // openDatabase reports it
  }
  const thread = sqliteThread(file, logger);
  const connecting = thread.connect();
  connecting.catch(() => undefined); // Prisma connects through this promise, and reports its failure
  startedAhead = { file, thread, connecting };
}

/**
 * The thread that serves `file`, and the adapter Prisma connects through: the thread startSqliteThread started, whose
 * first connection Prisma then takes over, or a new one.
 */
export function takeSqliteThread(file: string, logger: OpenDatabaseOptions["logger"]): { thread: PrismaSqliteThread; adapter: SqlDriverAdapterFactory } {
  if (startedAhead?.file !== file) {
    const thread = sqliteThread(file, logger);
    return { thread, adapter: thread };
  }
  const { thread, connecting } = startedAhead;
  startedAhead = undefined;
  let first: Promise<SqlDriverAdapter> | undefined = connecting;
  const connect = (): Promise<SqlDriverAdapter> => {
    const connection = first ?? thread.connect();
    first = undefined;
    return connection;
  };
  return { thread, adapter: { provider: thread.provider, adapterName: thread.adapterName, connect } };
}

// Requests go through a worker thread (src/store/sqlite/), so statements and commits never stall the event loop.
function sqliteThread(file: string, logger: OpenDatabaseOptions["logger"]): PrismaSqliteThread {
  return new PrismaSqliteThread({
    file,
    busyTimeoutMs: sqliteBusyTimeoutMs,
    pragmas: sqlitePragmas,
    onThreadExit: (error) => logger?.error?.({ err: error, database: file }, "the SQLite thread died; the requests it held failed, the next one starts another"),
  });
}
