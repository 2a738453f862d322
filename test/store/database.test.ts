import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { defaultDatabaseUrl, openDatabase, Prisma, redact, type Database } from "../../src/store/database.js";
import { createPostgresDatabase, queryPostgres, type TestDatabase } from "../support/postgres-database.js";
import { operationRow } from "./operation-row.js";

let dataDir: string;
beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), "axon-store-"));
});
afterAll(() => rm(dataDir, { recursive: true, force: true }));

const opened: Database[] = [];
async function open(url: string, logger?: Parameters<typeof openDatabase>[1]): Promise<Database> {
  const database = await openDatabase(url, logger);
  opened.push(database);
  return database;
}
afterEach(async () => {
  await Promise.all(opened.splice(0).map((database) => database.close()));
});


describe("opening the default SQLite database", () => {
  it("creates the data directory and the file, and applies every migration", async () => {
    const url = defaultDatabaseUrl(path.join(dataDir, "fresh", "data"));
    const database = await open(url);
    expect(database.provider).toBe("sqlite");
    expect(database.appliedMigrations.length).toBeGreaterThan(0);
    expect(existsSync(path.join(dataDir, "fresh", "data", "axon.db"))).toBe(true);
    const [mode] = await database.prisma.$queryRawUnsafe<{ journal_mode: string }[]>("PRAGMA journal_mode");
    expect(mode?.journal_mode).toBe("wal");
  });

  it("applies nothing the second time", async () => {
    const url = defaultDatabaseUrl(path.join(dataDir, "twice"));
    const first = await open(url);
    await first.close();
    const second = await open(url);
    expect(second.appliedMigrations).toEqual([]);
  });

  it("logs the file and the migrations applied", async () => {
    const lines: { fields: Record<string, unknown>; message: string }[] = [];
    const logger = { info: (fields: Record<string, unknown>, message: string) => lines.push({ fields, message }) };
    const database = await open(defaultDatabaseUrl(path.join(dataDir, "logged")), { logger: logger as never });
    expect(lines).toHaveLength(1);
    expect(lines[0]?.fields).toMatchObject({
      provider: "sqlite",
      database: path.join(dataDir, "logged", "axon.db"),
      migrations_applied: database.appliedMigrations.length,
      migrations: database.appliedMigrations,
    });
  });
});

describe("on PostgreSQL", () => {
  let postgres: TestDatabase;
  beforeAll(async () => {
    postgres = await createPostgresDatabase();
  });
  afterAll(() => postgres?.drop());

  it("two replicas opening one fresh database both start, and the migrations are applied once", async () => {
    const [first, second] = await Promise.all([open(postgres.url), open(postgres.url)]);
    expect(first.provider).toBe("postgresql");
    const applied = [...first.appliedMigrations, ...second.appliedMigrations];
    const rows = await queryPostgres<{ migration_name: string }>(postgres.url, "SELECT migration_name FROM _prisma_migrations WHERE finished_at IS NOT NULL");
    expect(applied.sort()).toEqual(rows.map((row) => row.migration_name).sort());
    expect(rows.length).toBeGreaterThan(0);
  });

  it("applies nothing the second time", async () => {
    const database = await open(postgres.url);
    expect(database.appliedMigrations).toEqual([]);
  });

  it("never logs the password", async () => {
    expect(redact("postgresql://axon:s3cret@db.example:5432/axon?sslmode=require")).toBe("postgresql://axon:***@db.example:5432/axon?sslmode=require");
    const lines: string[] = [];
    const logger = { info: (fields: Record<string, unknown>, message: string) => lines.push(JSON.stringify(fields) + message) };
    const url = new URL(postgres.url);
    url.password = "not-checked-under-trust-auth";
    await open(url.toString(), { logger: logger as never });
    expect(lines.join("\n")).not.toContain("not-checked-under-trust-auth");
    expect(lines.join("\n")).toContain("***");
  });
});

describe.each([
  ["sqlite", () => Promise.resolve(defaultDatabaseUrl(path.join(dataDir, "crud")))],
  ["postgresql", async () => {
    const created = await createPostgresDatabase();
    dropAfter.push(created);
    return created.url;
  }],
] as const)("the generated client on %s", (_provider, databaseUrl) => {
  let database: Database;
  beforeAll(async () => {
    database = await openDatabase(await databaseUrl());
  });
  afterAll(() => database?.close());

  it("creates an operation and reads back its JSON columns as written", async () => {
    const created = await database.prisma.operation.create({ data: operationRow("op-json") });
    expect(created.createdAt).toBeInstanceOf(Date);
    const read = await database.prisma.operation.findUniqueOrThrow({ where: { id: "op-json" } });
    expect(read.target).toEqual(operationRow("op-json").target);
    expect(read.arguments).toEqual(operationRow("op-json").arguments);
    expect(read.result).toBeNull();
  });

  it("refuses a second operation with the same (client, idempotency key) as P2002", async () => {
    await database.prisma.operation.create({ data: operationRow("op-first", "key-1") });
    const duplicate = database.prisma.operation.create({ data: operationRow("op-second", "key-1") });
    await expect(duplicate).rejects.toBeInstanceOf(Prisma.PrismaClientKnownRequestError);
    await expect(duplicate).rejects.toMatchObject({ code: "P2002" });
    expect(await database.prisma.operation.count({ where: { idempotencyKey: "key-1" } })).toBe(1);
  });

  it("compare-and-swaps on revision", async () => {
    await database.prisma.operation.create({ data: operationRow("op-cas") });
    const won = await database.prisma.operation.updateMany({ where: { id: "op-cas", revision: 1 }, data: { state: "approved", revision: 2 } });
    const lost = await database.prisma.operation.updateMany({ where: { id: "op-cas", revision: 1 }, data: { state: "denied", revision: 2 } });
    expect([won.count, lost.count]).toEqual([1, 0]);
  });

  it("round-trips bytes, and deleting a stream deletes its chunks", async () => {
    const nonce = new Uint8Array([0, 1, 2, 253, 254, 255, 0, 7, 8, 9, 10, 11]);
    const ciphertext = new Uint8Array(70_000).map((_, index) => (index * 31) % 256);
    await database.prisma.sealedPayload.create({
      data: { id: "sealed_1", clientId: "client-a", digest: "cd".repeat(32), size: 5, nonce, ciphertext, expiresAt: new Date(Date.now() + 60_000) },
    });
    const sealed = await database.prisma.sealedPayload.findUniqueOrThrow({ where: { id: "sealed_1" } });
    expect(Buffer.from(sealed.nonce).equals(Buffer.from(nonce))).toBe(true);
    expect(Buffer.from(sealed.ciphertext).equals(Buffer.from(ciphertext))).toBe(true);

    await database.prisma.transferStream.create({
      data: {
        id: "stream_1", clientId: "client-a", transferId: "transfer-1", size: 3, sha256: "ef".repeat(32),
        expiresAt: new Date(Date.now() + 60_000), chunks: { create: [{ index: 0, data: new Uint8Array([1, 2, 3]) }] },
      },
    });
    await database.prisma.transferStream.delete({ where: { id: "stream_1" } });
    expect(await database.prisma.transferChunk.count({ where: { streamId: "stream_1" } })).toBe(0);
  });

  it("numbers events in order", async () => {
    const first = await database.prisma.event.create({ data: { kind: "operation.created", clientId: "client-a", payload: { n: 1 } } });
    const second = await database.prisma.event.create({ data: { kind: "operation.created", clientId: "client-a", payload: { n: 2 } } });
    expect(second.seq).toBeGreaterThan(first.seq);
  });
});

const dropAfter: TestDatabase[] = [];
afterAll(async () => {
  await Promise.all(dropAfter.map((created) => created.drop()));
});
