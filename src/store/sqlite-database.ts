import { PrismaBetterSqlite3 } from "@prisma/adapter-better-sqlite3";
import type { SqlMigrationAwareDriverAdapterFactory } from "@prisma/driver-adapter-utils";
import { PrismaClient as SqlitePrismaClient } from "../gen/prisma/sqlite/client.js";
import type { DatabaseTarget, OpenDatabaseOptions } from "./database.js";
import { sqliteBusyTimeoutMs, sqliteFile, sqlitePragmas, takeSqliteThread } from "./sqlite-thread.js";

/** An SQLite file: migrated on the event loop, served from a worker thread. */
export function sqliteTarget(databaseUrl: string, logger: OpenDatabaseOptions["logger"]): DatabaseTarget {
  const file = sqliteFile(databaseUrl);
  const { thread, adapter } = takeSqliteThread(file, logger);
  return {
    description: file,
    // SQLite serializes writers itself; the engine applies each migration in a transaction.
    migrate: (apply) => apply(),
    // Migrations run once, before anything is served, on one connection the engine locks exclusively: on the event
    // loop through Prisma's own adapter, which saves starting a thread for them.
    migrationAdapter: () => withPragmas(new PrismaBetterSqlite3({ url: file, timeout: sqliteBusyTimeoutMs })),
    client: () => new SqlitePrismaClient({ adapter }),
    direct: thread,
  };
}

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
