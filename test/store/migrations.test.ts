import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { PrismaBetterSqlite3 } from "@prisma/adapter-better-sqlite3";
import { PrismaPg } from "@prisma/adapter-pg";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { postgresMigrationAdapter } from "../../src/store/postgres-database.js";
import { applyMigrations, readMigrations } from "../../src/store/migrate.js";
import { migrateNewSqliteDatabase } from "../../src/store/new-sqlite-database.js";
import { withSchemaEngine } from "../../src/store/schema-engine.js";
import { migrationsDirectory, schemaFile } from "../../src/store/schema-files.js";
import { createPostgresDatabase, queryPostgres, type TestDatabase } from "../support/postgres-database.js";

/** What `prisma db push` makes of the committed schema on an empty database: the reference the migrations must reproduce. */
async function pushSqliteSchema(file: string): Promise<void> {
  const content = await readFile(schemaFile("sqlite"), "utf8");
  const result = await withSchemaEngine(new PrismaBetterSqlite3({ url: file }), (engine) =>
    engine.schemaPush({ force: false, schema: { files: [{ path: "schema.prisma", content }] }, filters: { externalTables: [], externalEnums: [] } }),
  );
  expect(result.unexecutable).toEqual([]);
  expect(result.executedSteps).toBeGreaterThan(0);
}

/**
 * The same for PostgreSQL, where the engine cannot push through @prisma/adapter-pg 7.10.0: reading the live catalog
 * returns a `"char"` column the adapter cannot decode. Pushing to an empty database is applying the diff from empty to
 * the datamodel, so that is what this does.
 */
async function pushPostgresSchema(url: string): Promise<void> {
  const content = await readFile(schemaFile("postgresql"), "utf8");
  const script = await withSchemaEngine(new PrismaPg({ connectionString: url }), async (engine) => {
    const to = { tag: "schemaDatamodel" as const, files: [{ path: "schema.prisma", content }] };
    const result = await engine.diff({ from: { tag: "empty" }, to, script: true, exitCode: null, filters: { externalTables: [], externalEnums: [] } });
    return result.stdout ?? "";
  });
  expect(script).toContain("CREATE TABLE");
  await queryPostgres(url, script);
}

describe("the SQLite migrations folder", () => {
  let directory: string;
  beforeAll(async () => {
    directory = await mkdtemp(path.join(tmpdir(), "axon-sqlite-migrations-"));
  });
  afterAll(() => rm(directory, { recursive: true, force: true }));

  it("yields exactly the schema prisma/sqlite/schema.prisma describes", async () => {
    const migrated = path.join(directory, "migrated.db");
    const pushed = path.join(directory, "pushed.db");
    const applied = await applyMigrations(new PrismaBetterSqlite3({ url: migrated }), migrationsDirectory("sqlite"));
    expect(applied.length).toBeGreaterThan(0);
    await pushSqliteSchema(pushed);

    const fromMigrations = sqliteCatalog(migrated);
    expect(fromMigrations.map((entry) => entry.name)).toContain("Operation_clientId_idempotencyKey_key");
    // Exactly the datamodel, plus the triggers that keep the load counts (which a datamodel cannot express).
    expect(fromMigrations.filter((entry) => entry.type !== "trigger")).toEqual(sqliteCatalog(pushed));
    expect(fromMigrations.filter((entry) => entry.type === "trigger").map((entry) => entry.name)).toEqual(loadTriggers.sqlite);
  });
});

describe("a new SQLite file", () => {
  let directory: string;
  beforeAll(async () => {
    directory = await mkdtemp(path.join(tmpdir(), "axon-new-sqlite-"));
  });
  afterAll(() => rm(directory, { recursive: true, force: true }));

  it("is migrated without the schema engine to what the engine makes of it, with its records, and the engine finds nothing to do", async () => {
    const ours = path.join(directory, "ours.db");
    const engines = path.join(directory, "engines.db");
    const migrations = await readMigrations(migrationsDirectory("sqlite"));
    const names = migrations.migrationDirectories.map((migration) => migration.path);
    expect(await migrateNewSqliteDatabase(new PrismaBetterSqlite3({ url: ours }), migrations)).toEqual(names);
    await withSchemaEngine(new PrismaBetterSqlite3({ url: engines }), (engine) => engine.applyMigrations({ migrationsList: migrations, filters }));

    expect(sqliteCatalog(ours)).toEqual(sqliteCatalog(engines));
    expect(migrationRecords(ours)).toEqual(migrationRecords(engines));
    const diagnosis = await withSchemaEngine(new PrismaBetterSqlite3({ url: ours }), (engine) =>
      engine.diagnoseMigrationHistory({ migrationsList: migrations, optInToShadowDatabase: false, filters }),
    );
    expect(diagnosis).toMatchObject({ hasMigrationsTable: true, history: null, editedMigrationNames: [], failedMigrationNames: [] });
    const again = await withSchemaEngine(new PrismaBetterSqlite3({ url: ours }), (engine) => engine.applyMigrations({ migrationsList: migrations, filters }));
    expect(again.appliedMigrationNames).toEqual([]);
  });

  it("that a migration fails on is left to the engine, which records the ones before it and the failure", async () => {
    const file = path.join(directory, "failing.db");
    const folder = path.join(directory, "failing-migrations");
    await cp(migrationsDirectory("sqlite"), folder, { recursive: true });
    await mkdir(path.join(folder, "29990101000000_broken"));
    await writeFile(path.join(folder, "29990101000000_broken", "migration.sql"), 'ALTER TABLE "Missing" ADD COLUMN "x" TEXT;\n');

    await expect(applyMigrations(new PrismaBetterSqlite3({ url: file }), folder)).rejects.toThrow(/Missing/);
    const records = migrationRecords(file);
    expect(records.filter((record) => record.finished)).toHaveLength(records.length - 1);
    expect(records.at(-1)).toMatchObject({ migration_name: "29990101000000_broken", finished: 0 });
  });
});

describe("applying migrations to a database that has some", () => {
  let directory: string;
  beforeAll(async () => {
    directory = await mkdtemp(path.join(tmpdir(), "axon-migrations-again-"));
  });
  afterAll(() => rm(directory, { recursive: true, force: true }));

  it("applies a migration added since the last start, and only that one", async () => {
    const file = path.join(directory, "added.db");
    const folder = path.join(directory, "added-migrations");
    await cp(migrationsDirectory("sqlite"), folder, { recursive: true });
    await applyMigrations(new PrismaBetterSqlite3({ url: file }), folder);
    await mkdir(path.join(folder, "29990101000000_added"));
    await writeFile(path.join(folder, "29990101000000_added", "migration.sql"), 'CREATE TABLE "Added" ("id" TEXT NOT NULL PRIMARY KEY);\n');

    expect(await applyMigrations(new PrismaBetterSqlite3({ url: file }), folder)).toEqual(["29990101000000_added"]);
    expect(sqliteCatalog(file).map((entry) => entry.name)).toContain("Added");
  });

  it("refuses to start over a migration recorded as failed, as the engine does", async () => {
    const file = path.join(directory, "failed.db");
    const applied = await applyMigrations(new PrismaBetterSqlite3({ url: file }), migrationsDirectory("sqlite"));
    const db = new Database(file);
    db.prepare("UPDATE _prisma_migrations SET finished_at = NULL WHERE migration_name = ?").run(applied.at(-1));
    db.close();

    await expect(applyMigrations(new PrismaBetterSqlite3({ url: file }), migrationsDirectory("sqlite"))).rejects.toThrow(/failed/i);
  });
});

describe("the PostgreSQL migrations folder", () => {
  let migrated: TestDatabase;
  let pushed: TestDatabase;
  beforeAll(async () => {
    [migrated, pushed] = await Promise.all([createPostgresDatabase(), createPostgresDatabase()]);
  });
  afterAll(async () => {
    await Promise.all([migrated?.drop(), pushed?.drop()]);
  });

  it("yields exactly the schema prisma/postgres/schema.prisma describes", async () => {
    const applied = await applyMigrations(postgresMigrationAdapter(migrated.url), migrationsDirectory("postgresql"));
    expect(applied.length).toBeGreaterThan(0);
    await pushPostgresSchema(pushed.url);

    const fromMigrations = await postgresCatalog(migrated.url);
    expect(fromMigrations.indexes.map((index) => index.indexname)).toContain("Operation_clientId_idempotencyKey_key");
    // Exactly the datamodel, plus the triggers that keep the load counts (which a datamodel cannot express).
    const { triggers, ...schema } = fromMigrations;
    const { triggers: pushedTriggers, ...pushedSchema } = await postgresCatalog(pushed.url);
    expect(schema).toEqual(pushedSchema);
    expect(pushedTriggers).toEqual([]);
    expect(triggers).toEqual(loadTriggers.postgresql);
  });
});

/** The triggers of migration `admission_load`, as each catalog lists them. */
const loadTriggers = {
  sqlite: ["Grant_load_delete", "Grant_load_insert", "Grant_load_update", "Operation_load_delete", "Operation_load_insert", "Operation_load_update"],
  postgresql: ["Grant", "Operation"].flatMap((table) =>
    ["DELETE", "INSERT", "UPDATE"].map((event) => ({
      table,
      trigger: `${table}_load`,
      event,
      action: `EXECUTE FUNCTION ${table === "Grant" ? "count_pending_grants" : "count_active_operations"}()`,
    })),
  ),
};

const filters = { externalTables: [], externalEnums: [] };

/** `_prisma_migrations` without what differs from one run to the next (ids, times), but with the times' format. */
function migrationRecords(file: string): Record<string, unknown>[] {
  const db = new Database(file, { readonly: true });
  try {
    const table = db.prepare("SELECT sql FROM sqlite_master WHERE name = '_prisma_migrations'").get() as { sql: string };
    const rows = db
      .prepare(
        `SELECT migration_name, checksum, logs IS NOT NULL AS logged, rolled_back_at, applied_steps_count,
                finished_at IS NOT NULL AS finished, finished_at, started_at
           FROM _prisma_migrations ORDER BY migration_name`,
      )
      .all() as Record<string, unknown>[];
    const engineTime = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00$/;
    return rows.map(({ finished_at, started_at, ...row }) => ({
      ...row,
      table: table.sql,
      timesInEngineFormat: [finished_at, started_at].every((time) => time === null || engineTime.test(String(time))),
    }));
  } finally {
    db.close();
  }
}

/** Every table, index and trigger of an SQLite file as normalized DDL, without the migrations' own bookkeeping. */
function sqliteCatalog(file: string): { type: string; name: string; sql: string }[] {
  const db = new Database(file, { readonly: true });
  try {
    const rows = db
      .prepare("SELECT type, name, sql FROM sqlite_master WHERE name NOT IN ('_prisma_migrations', 'sqlite_sequence') AND name NOT LIKE 'sqlite_autoindex_%' ORDER BY type, name")
      .all() as { type: string; name: string; sql: string | null }[];
    return rows.map((row) => ({ type: row.type, name: row.name, sql: normalizeSql(row.sql ?? "") }));
  } finally {
    db.close();
  }
}

function normalizeSql(sql: string): string {
  return sql.replace(/\s+/g, " ").replace(/\(\s+/g, "(").replace(/\s+\)/g, ")").replace(/\s*,\s*/g, ", ").trim();
}

/** The public schema's columns, indexes, constraints, sequences and triggers, sorted, without `_prisma_migrations`. */
async function postgresCatalog(url: string) {
  const columns = await queryPostgres(
    url,
    `SELECT table_name, column_name, data_type, udt_name, is_nullable, column_default, character_maximum_length,
            numeric_precision, datetime_precision
       FROM information_schema.columns
      WHERE table_schema = 'public' AND table_name <> '_prisma_migrations'
      ORDER BY table_name, column_name`,
  );
  const indexes = await queryPostgres<{ indexname: string }>(
    url,
    `SELECT tablename, indexname, indexdef FROM pg_indexes
      WHERE schemaname = 'public' AND tablename <> '_prisma_migrations' ORDER BY tablename, indexname`,
  );
  const constraints = await queryPostgres(
    url,
    `SELECT rel.relname AS table_name, con.conname, con.contype, pg_get_constraintdef(con.oid) AS definition
       FROM pg_constraint con
       JOIN pg_class rel ON rel.oid = con.conrelid
       JOIN pg_namespace ns ON ns.oid = rel.relnamespace
      WHERE ns.nspname = 'public' AND rel.relname <> '_prisma_migrations'
      ORDER BY rel.relname, con.conname`,
  );
  const sequences = await queryPostgres(
    url,
    `SELECT sequence_name, data_type FROM information_schema.sequences WHERE sequence_schema = 'public' ORDER BY sequence_name`,
  );
  const triggers = await queryPostgres(
    url,
    `SELECT event_object_table AS table, trigger_name AS trigger, event_manipulation AS event, action_statement AS action
       FROM information_schema.triggers WHERE trigger_schema = 'public' ORDER BY 1, 2, 3`,
  );
  return { columns, indexes, constraints, sequences, triggers };
}
