import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach } from "vitest";
import { defaultDatabaseUrl, openDatabase, type Database } from "../../src/store/database.js";
import { createPostgresDatabase } from "./postgres-database.js";

/**
 * Migrated databases of a test file's own, on SQLite (a temporary folder) and on PostgreSQL (a fresh database), each
 * closed and removed after its test, with whatever else the test hands to `defer`, last first.
 */
export function testDatabases(prefix: string) {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  const defer = (cleanup: () => Promise<unknown>) => void cleanups.push(cleanup);
  const opened = async (url: string) => {
    const database = await openDatabase(url);
    defer(() => database.close());
    return database;
  };
  return {
    defer,
    async sqlite(): Promise<Database> {
      const dir = await mkdtemp(path.join(tmpdir(), `${prefix}-`));
      defer(() => rm(dir, { recursive: true, force: true }));
      return opened(defaultDatabaseUrl(dir));
    },
    async postgres(): Promise<Database> {
      const test = await createPostgresDatabase();
      defer(() => test.drop());
      return opened(test.url);
    },
  };
}
