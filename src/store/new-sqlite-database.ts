import { createHash, randomUUID } from "node:crypto";
import type { SqlDriverAdapter, SqlMigrationAwareDriverAdapterFactory } from "@prisma/driver-adapter-utils";
import type { MigrationList } from "@prisma/schema-engine-wasm";

/**
 * Applies every migration to an SQLite database that has no tables yet, as `prisma migrate deploy` would, and returns
 * their names; undefined, having changed nothing, when the database is not new or the folder is not SQLite's.
 *
 * A first start is the one case common enough to be worth it: loading and running the schema engine costs a few hundred
 * milliseconds for work that is only "run each script and record it". The records are the engine's own, row for row
 * (table definition, checksum, timestamps' format), so the engine and `prisma migrate` take over from here unchanged.
 * Unlike the engine, all migrations apply in one transaction: a failure leaves the file empty, and the engine, called
 * next, applies them again and records which failed.
 */
export async function migrateNewSqliteDatabase(adapterFactory: SqlMigrationAwareDriverAdapterFactory, migrations: MigrationList): Promise<string[] | undefined> {
  if (adapterFactory.provider !== "sqlite" || !/^provider = "sqlite"$/m.test(migrations.lockfile.content ?? "")) return undefined;
  const scripts = migrations.migrationDirectories.map(({ path: name, migrationFile: { content } }) => ({ name, script: content.tag === "ok" ? content.value : undefined }));
  if (scripts.some(({ script }) => script === undefined)) return undefined;

  const adapter = await adapterFactory.connect();
  try {
    // IMMEDIATE: a second process starting on the same new file waits here, then finds it no longer empty.
    await adapter.executeScript("BEGIN IMMEDIATE");
    try {
      if (!(await isEmpty(adapter))) {
        await adapter.executeScript("ROLLBACK");
        return undefined;
      }
      await adapter.executeScript(migrationsTable);
      for (const { name, script } of scripts) {
        const startedAt = engineTimestamp();
        await adapter.executeScript(script!);
        await adapter.executeRaw({
          sql: `INSERT INTO "_prisma_migrations" ("id", "checksum", "finished_at", "migration_name", "logs", "rolled_back_at", "started_at", "applied_steps_count") VALUES (?, ?, ?, ?, NULL, NULL, ?, 1)`,
          args: [randomUUID(), createHash("sha256").update(script!).digest("hex"), engineTimestamp(), name, startedAt],
          argTypes: Array.from({ length: 5 }, () => ({ scalarType: "string" as const, arity: "scalar" as const })),
        });
      }
      await adapter.executeScript("COMMIT");
    } catch {
      await adapter.executeScript("ROLLBACK").catch(() => undefined);
      return undefined;
    }
    return scripts.map(({ name }) => name);
  } finally {
    await adapter.dispose();
  }
}

async function isEmpty(adapter: SqlDriverAdapter): Promise<boolean> {
  const { rows } = await adapter.queryRaw({ sql: "SELECT count(*) FROM sqlite_master", args: [], argTypes: [] });
  return Number(rows[0]?.[0]) === 0;
}

/**
 * The table the schema engine makes in SQLite, column for column, so the engine and `prisma migrate` read these records
 * as their own.
 */
const migrationsTable = `CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
    "id"                    TEXT PRIMARY KEY NOT NULL,
    "checksum"              TEXT NOT NULL,
    "finished_at"           DATETIME,
    "migration_name"        TEXT NOT NULL,
    "logs"                  TEXT,
    "rolled_back_at"        DATETIME,
    "started_at"            DATETIME NOT NULL DEFAULT current_timestamp,
    "applied_steps_count"   INTEGER UNSIGNED NOT NULL DEFAULT 0
);`;

/** Now as the engine writes it in SQLite: RFC 3339 with milliseconds and `+00:00` (`2026-11-30T23:48:10.092+00:00`). */
function engineTimestamp(): string {
  return new Date().toISOString().replace(/Z$/, "+00:00");
}
