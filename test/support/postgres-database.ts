import { randomBytes } from "node:crypto";
import pg from "pg";

/** The local server's maintenance database (platform.md §5: PostgreSQL on 127.0.0.1:5432, trust auth). */
const adminUrl = process.env.AXON_TEST_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

/** A fresh, uniquely named database on the local server, for one test; `drop` removes it even if connections remain. */
export async function createPostgresDatabase(): Promise<TestDatabase> {
  const name = `axon_test_${randomBytes(6).toString("hex")}`;
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
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
