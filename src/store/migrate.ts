import { readFile, readdir } from "node:fs/promises";
import path from "node:path";
import type { SqlMigrationAwareDriverAdapterFactory } from "@prisma/driver-adapter-utils";
import type { MigrationList } from "@prisma/schema-engine-wasm";
import { migrateNewSqliteDatabase } from "./new-sqlite-database.js";
import { withSchemaEngine } from "./schema-engine.js";

/**
 * Applies the migrations of `directory` not yet recorded in the database's `_prisma_migrations`, in name order, and
 * returns the names applied. The same table and checksums as `prisma migrate deploy`, so either tool can take over.
 */
export async function applyMigrations(adapterFactory: SqlMigrationAwareDriverAdapterFactory, directory: string): Promise<string[]> {
  const migrationsList = await readMigrations(directory);
  // The usual start finds every migration recorded; one query tells, and spares loading and compiling the engine
  // (about a third of a start's CPU). A new SQLite file, a first start's, needs no engine either. Anything else (a new
  // migration, a failed one, a new PostgreSQL database) goes to the engine.
  if (await allRecorded(adapterFactory, migrationsList.migrationDirectories.map((migration) => migration.path))) return [];
  const appliedToNewFile = await migrateNewSqliteDatabase(adapterFactory, migrationsList);
  if (appliedToNewFile) return appliedToNewFile;
  const output = await withSchemaEngine(adapterFactory, (engine) =>
    engine.applyMigrations({ migrationsList, filters: { externalTables: [], externalEnums: [] } }),
  );
  return output.appliedMigrationNames;
}

/**
 * Whether `_prisma_migrations` records every one of `names` as finished and nothing as failed (a failed migration
 * blocks the others until resolved, which only the engine reports). False when the table is missing.
 */
async function allRecorded(adapterFactory: SqlMigrationAwareDriverAdapterFactory, names: string[]): Promise<boolean> {
  const adapter = await adapterFactory.connect();
  try {
    const { rows } = await adapter.queryRaw({
      sql: "SELECT migration_name, finished_at IS NOT NULL AS finished FROM _prisma_migrations WHERE rolled_back_at IS NULL",
      args: [],
      argTypes: [],
    });
    const finished = new Set(rows.filter(([, done]) => Boolean(done)).map(([name]) => String(name)));
    return rows.every(([, done]) => Boolean(done)) && names.every((name) => finished.has(name));
  } catch {
    return false; // no table yet: a new database
  } finally {
    await adapter.dispose();
  }
}

/** A migrations folder in the shape the schema engine reads: `<name>/migration.sql` and `migration_lock.toml`. */
export async function readMigrations(directory: string): Promise<MigrationList> {
  const lockfile = "migration_lock.toml";
  const entries = await readdir(directory, { withFileTypes: true });
  const names = entries.filter((entry) => entry.isDirectory()).map((entry) => entry.name).sort();
  return {
    baseDir: directory,
    lockfile: { path: lockfile, content: await readFile(path.join(directory, lockfile), "utf8").catch(() => null) },
    shadowDbInitScript: "",
    migrationDirectories: await Promise.all(
      names.map(async (name) => ({
        path: name,
        migrationFile: { path: "migration.sql", content: { tag: "ok" as const, value: await readFile(path.join(directory, name, "migration.sql"), "utf8") } },
      })),
    ),
  };
}
