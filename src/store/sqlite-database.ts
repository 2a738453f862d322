import { mkdirSync } from "node:fs";
import path from "node:path";
import { PrismaBetterSqlite3 } from "@prisma/adapter-better-sqlite3";
import type { SqlMigrationAwareDriverAdapterFactory } from "@prisma/driver-adapter-utils";
import { PrismaClient as SqlitePrismaClient } from "../gen/prisma/sqlite/client.js";
import type { DatabaseTarget, OpenDatabaseOptions } from "./database.js";
import { PrismaSqliteThread } from "./sqlite/adapter.js";

/** Waits this long on a locked SQLite file (another connection writing) before failing. */
const sqliteBusyTimeoutMs = 5_000;

/** An SQLite file: migrated on the event loop, served from a worker thread. */
export function sqliteTarget(databaseUrl: string, logger: OpenDatabaseOptions["logger"]): DatabaseTarget {
  const [location = ""] = databaseUrl.slice("file:".length).split("?");
  // Every connection to ":memory:" is a new database: the migrated one would not be the one the client sees.
  if (location === "" || location === ":memory:") throw new Error("DATABASE_URL must name an SQLite file (file:<path>)");
  const file = path.resolve(location);
  mkdirSync(path.dirname(file), { recursive: true });
  // Requests go through a worker thread (src/store/sqlite/), so statements and commits never stall the event loop.
  const thread = new PrismaSqliteThread({
    file,
    busyTimeoutMs: sqliteBusyTimeoutMs,
    pragmas: sqlitePragmas,
    onThreadExit: (error) => logger?.error?.({ err: error, database: file }, "the SQLite thread died; the requests it held failed, the next one starts another"),
  });
  return {
    description: file,
    // SQLite serializes writers itself; the engine applies each migration in a transaction.
    migrate: (apply) => apply(),
    // Migrations run once, before anything is served, on one connection the engine locks exclusively: on the event
    // loop through Prisma's own adapter, which saves starting a thread for them.
    migrationAdapter: () => withPragmas(new PrismaBetterSqlite3({ url: file, timeout: sqliteBusyTimeoutMs })),
    client: () => new SqlitePrismaClient({ adapter: thread }),
    direct: thread,
  };
}

/**
 * Every SQLite connection that writes: WAL, so readers never wait for the writer (a property of the file, set again
 * harmlessly), and foreign keys enforced, which SQLite leaves off per connection.
 */
const sqlitePragmas = "PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON;";

function withPragmas(factory: PrismaBetterSqlite3): SqlMigrationAwareDriverAdapterFactory {
  return {
    provider: factory.provider,
    adapterName: factory.adapterName,
    connect: async () => {
      const adapter = await factory.connect();
      await adapter.executeScript(sqlitePragmas);
      return adapter;
    },
    connectToShadowDb: () => factory.connectToShadowDb(),
  };
}
