import { randomBytes } from "node:crypto";
import pg from "pg";

/** The local server's maintenance database (platform.md §5: PostgreSQL on 127.0.0.1:5432, trust auth). */
export const adminUrl = process.env.AXON_TEST_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";

export interface TestDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

/**
 * A fresh, uniquely named database on the local server, for one test or bench run; `drop` removes it even if
 * connections remain.
 */
export async function createPostgresDatabase(prefix = "axon_test"): Promise<TestDatabase> {
  const name = `${prefix}_${randomBytes(6).toString("hex")}`;
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return { name, url: url.toString(), drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

async function admin(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** Rows of a query on `url`, through a connection of their own. */
export async function queryPostgres<Row extends object>(url: string, sql: string): Promise<Row[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<Row>(sql)).rows as Row[];
  } finally {
    await client.end();
  }
}
