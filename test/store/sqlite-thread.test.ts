import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { setImmediate as turn } from "node:timers/promises";
import { PrismaBetterSqlite3 } from "@prisma/adapter-better-sqlite3";
import Sqlite from "better-sqlite3";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { PrismaClient as SqlitePrismaClient } from "../../src/gen/prisma/sqlite/client.js";
import { openDatabase, Prisma, type PrismaClient } from "../../src/store/database.js";
import { PrismaSqliteThread, type SqliteThreadOptions } from "../../src/store/sqlite/adapter.js";
import { isStorageError, isStorageUnavailable, isUniqueViolation } from "../../src/store/storage-errors.js";
import { thrown } from "../support/thrown.js";
import { within } from "../support/wait.js";
import { operationRow } from "./operation-row.js";

// The SQLite adapter whose better-sqlite3 connections live in a worker thread (src/store/sqlite/), on real files.

let dir: string;
let files = 0;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "axon-sqlite-thread-"));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const clients: PrismaClient[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.$disconnect()));
});

/** A fresh database file with every migration applied, closed again. */
async function migratedFile(): Promise<string> {
  const file = path.join(dir, `db-${++files}.db`);
  await (await openDatabase(`file:${file}`)).close();
  return file;
}

/** Axon's client on a fresh file, as `openDatabase` gives it. */
async function axonClient(): Promise<{ prisma: PrismaClient; file: string }> {
  const file = path.join(dir, `db-${++files}.db`);
  const database = await openDatabase(`file:${file}`);
  clients.push(database.prisma);
  return { prisma: database.prisma, file };
}

function threadClient(file: string, options: Partial<SqliteThreadOptions> = {}): PrismaClient {
  const prisma = new SqlitePrismaClient({ adapter: new PrismaSqliteThread({ file, busyTimeoutMs: 5_000, pragmas: "PRAGMA foreign_keys = ON;", ...options }) });
  clients.push(prisma);
  return prisma;
}

/** Prisma's own adapter on the same file: what databases written before this adapter were written with. */
async function stockClient(file: string): Promise<PrismaClient> {
  const prisma = new SqlitePrismaClient({ adapter: new PrismaBetterSqlite3({ url: file }) });
  clients.push(prisma);
  await prisma.$executeRawUnsafe("PRAGMA foreign_keys = ON");
  return prisma;
}

/** Another process's connection holding the file's write lock until released. */
function lockFile(file: string) {
  const connection = new Sqlite(file);
  connection.exec("BEGIN IMMEDIATE");
  return {
    release: () => {
      connection.exec("COMMIT");
      connection.close();
    },
  };
}

function audit(actor: string) {
  return { data: { actor, actorKind: "client", action: "test", detail: { actor } } };
}


describe("statements off the event loop", () => {
  it("the event loop keeps turning while a write waits for another process's lock, and the write lands once it is released", async () => {
    const { prisma, file } = await axonClient();
    const lock = lockFile(file);
    let settled = false;
    const write = prisma.auditRecord.create(audit("waits")).finally(() => (settled = true));
    // On the loop, better-sqlite3 would hold this test still until its busy timeout failed the write.
    for (let turns = 0; turns < 5; turns++) await turn();
    expect(settled).toBe(false);
    lock.release();
    await within(10_000, write, "the write after the lock was released");
    expect(await prisma.auditRecord.count({ where: { actor: "waits" } })).toBe(1);
  });

  it("a file locked past the busy timeout is a storage outage, not a bug", async () => {
    const file = await migratedFile();
    const prisma = threadClient(file, { busyTimeoutMs: 50 });
    const lock = lockFile(file);
    const error = await thrown(() => prisma.auditRecord.create(audit("locked-out")));
    lock.release();
    expect(isStorageUnavailable(error)).toBe(true);
    expect(await prisma.auditRecord.count({ where: { actor: "locked-out" } })).toBe(0);
  });
});

describe("transactions", () => {
  it("a read outside a transaction does not wait for it and sees only what is committed", async () => {
    const { prisma } = await axonClient();
    await prisma.$transaction(async (tx) => {
      await tx.auditRecord.create(audit("uncommitted"));
      expect(await tx.auditRecord.count({ where: { actor: "uncommitted" } })).toBe(1);
      // Were reads queued behind the transaction, this would wait for the transaction's timeout.
      expect(await prisma.auditRecord.count({ where: { actor: "uncommitted" } })).toBe(0);
    });
    expect(await prisma.auditRecord.count({ where: { actor: "uncommitted" } })).toBe(1);
  });

  it("a write outside a transaction waits for it and is not part of it: rolling the transaction back keeps the write", async () => {
    const { prisma } = await axonClient();
    let outside: Promise<unknown> | undefined;
    let outsideSettled = false;
    const rolledBack = prisma.$transaction(async (tx) => {
      await tx.auditRecord.create(audit("inside"));
      outside = prisma.auditRecord.create(audit("outside")).finally(() => (outsideSettled = true));
      await tx.auditRecord.count();
      await tx.auditRecord.count();
      expect(outsideSettled).toBe(false);
      throw new Error("roll it back");
    });
    await expect(rolledBack).rejects.toThrow("roll it back");
    await outside;
    expect(await prisma.auditRecord.count({ where: { actor: "inside" } })).toBe(0);
    expect(await prisma.auditRecord.count({ where: { actor: "outside" } })).toBe(1);
  });

  it("concurrent read-modify-write transactions never interleave: no update is lost", async () => {
    const { prisma } = await axonClient();
    const key = { clientId: "counted" };
    await prisma.clientLoad.create({ data: { clientId: "counted" } });
    await Promise.all(
      Array.from({ length: 25 }, () =>
        prisma.$transaction(async (tx) => {
          const { windowCount } = await tx.clientLoad.findUniqueOrThrow({ where: key });
          await tx.auditRecord.create(audit("counter")); // another round trip between the read and the write
          await tx.clientLoad.update({ where: key, data: { windowCount: windowCount + 1 } });
        }),
      ),
    );
    expect((await prisma.clientLoad.findUniqueOrThrow({ where: key })).windowCount).toBe(25);
  });

  it("with time to block, a transaction's statements complete in the task that sent them: it holds the writer for no turn of the event loop", async () => {
    const prisma = threadClient(await migratedFile(), { transactionStepMaxBlockMs: 60_000 });
    await prisma.auditRecord.count(); // the first statement compiles Prisma's query engine
    let loopTurned = false;
    await prisma.$transaction(async (tx) => {
      setImmediate(() => (loopTurned = true));
      await tx.auditRecord.create(audit("quick"));
      await tx.auditRecord.count();
      await tx.$executeRaw`UPDATE "AuditRecord" SET "category" = 'checked' WHERE "actor" = ${"quick"}`;
      expect(loopTurned).toBe(false);
    });
    expect(await prisma.auditRecord.count({ where: { category: "checked" } })).toBe(1);
  });

  it("a transaction that times out while waiting for the writer is dropped, and the writer goes on", async () => {
    const { prisma } = await axonClient();
    let holding!: () => void;
    let release!: () => void;
    const [holds, released] = [new Promise<void>((resolve) => (holding = resolve)), new Promise<void>((resolve) => (release = resolve))];
    const first = prisma.$transaction(
      async (tx) => {
        await tx.auditRecord.create(audit("first"));
        holding();
        await released;
      },
      { timeout: 60_000 },
    );
    await holds;
    const second = prisma.$transaction((tx) => tx.auditRecord.create(audit("second")), { timeout: 200 });
    await expect(second).rejects.toThrow();
    release();
    await first;
    await prisma.auditRecord.create(audit("after"));
    const actors = await prisma.auditRecord.findMany({ select: { actor: true }, orderBy: { id: "asc" } });
    expect(actors.map((row) => row.actor)).toEqual(["first", "after"]);
  });

  it("a batch is atomic: when its last statement fails, the first is undone", async () => {
    const { prisma } = await axonClient();
    await prisma.operation.create({ data: operationRow("op-taken", "key-taken") });
    const batch = prisma.$transaction([prisma.auditRecord.create(audit("batched")), prisma.operation.create({ data: operationRow("op-other", "key-taken") })]);
    await expect(batch).rejects.toMatchObject({ code: "P2002" });
    expect(await prisma.auditRecord.count({ where: { actor: "batched" } })).toBe(0);
  });

  it("more distinct statements than the statement cache holds all run right, again and again", async () => {
    const prisma = threadClient(await migratedFile(), { statementCacheSize: 2 });
    for (let round = 0; round < 3; round++) {
      for (const actor of ["a", "b", "c", "d"]) {
        // A statement text of its own per actor: four texts through a cache of two.
        await prisma.$executeRawUnsafe(`INSERT INTO "AuditRecord" ("actor", "actorKind", "action", "detail") VALUES ('${actor}', 'client', 'test', '{}')`);
        const [row] = await prisma.$queryRawUnsafe<{ n: number }[]>(`SELECT count(*) AS n FROM "AuditRecord" WHERE "actor" = '${actor}'`);
        expect(Number(row?.n)).toBe(round + 1);
      }
    }
  });

  it("raw statements run inside and outside transactions", async () => {
    const { prisma } = await axonClient();
    const inserted = await prisma.$transaction(async (tx) => {
      const changed = await tx.$executeRaw`INSERT INTO "AuditRecord" ("actor", "actorKind", "action", "detail") VALUES (${"raw"}, 'client', 'test', '{}')`;
      const [row] = await tx.$queryRaw<{ actor: string }[]>`SELECT "actor" FROM "AuditRecord" WHERE "actor" = ${"raw"}`;
      return { changed, actor: row?.actor };
    });
    expect(inserted).toEqual({ changed: 1, actor: "raw" });
    expect(await prisma.$executeRaw`DELETE FROM "AuditRecord" WHERE "actor" = ${"raw"}`).toBe(1);
  });
});

describe("direct statements, past Prisma", () => {
  async function directDatabase() {
    const file = path.join(dir, `db-${++files}.db`);
    const database = await openDatabase(`file:${file}`);
    clients.push(database.prisma);
    return { prisma: database.prisma, direct: database.direct! };
  }

  it("a query reads a row as Prisma's raw query does: dates, JSON and nulls alike", async () => {
    const { prisma, direct } = await directDatabase();
    await prisma.operation.create({ data: { ...operationRow("op-direct"), terminalAt: new Date("2026-01-02T03:04:05.678Z") } });
    const query = Prisma.sql`SELECT * FROM "Operation" WHERE "id" = ${"op-direct"}`;

    const [row] = await direct.query<Record<string, unknown>>(query);
    expect(row).toEqual((await prisma.$queryRaw<Record<string, unknown>[]>(query))[0]);
    expect(row?.terminalAt).toEqual(new Date("2026-01-02T03:04:05.678Z"));
    expect(row?.target).toEqual(operationRow("op-direct").target);
  });

  it("a batch writes all its statements in one transaction and tells the rows each changed", async () => {
    const { prisma, direct } = await directDatabase();
    const changed = await direct.batch([
      Prisma.sql`INSERT INTO "AuditRecord" ("actor", "actorKind", "action", "detail", "at") VALUES (${"batched"}, 'client', 'test', '{}', ${new Date()})`,
      Prisma.sql`UPDATE "AuditRecord" SET "category" = 'seen' WHERE "actor" = ${"batched"}`,
      Prisma.sql`UPDATE "AuditRecord" SET "category" = 'none' WHERE "actor" = ${"nobody"}`,
    ]);
    expect(changed).toEqual([1, 1, 0]);
    expect(await prisma.auditRecord.findMany({ where: { actor: "batched" }, select: { category: true } })).toEqual([{ category: "seen" }]);
  });

  it("a batch hands back what a statement returns, and a statement can go on only if the one before it changed a row", async () => {
    const { prisma, direct } = await directDatabase();
    await prisma.auditRecord.create(audit("returned"));
    const insertIfChanged = Prisma.sql`INSERT INTO "AuditRecord" ("actor", "actorKind", "action", "detail", "at") SELECT ${"followed"}, 'client', 'test', '{}', ${new Date()} WHERE changes() = 1`;

    const [returned, followed] = await direct.batch([Prisma.sql`UPDATE "AuditRecord" SET "category" = 'seen' WHERE "actor" = ${"returned"} RETURNING "actor", "category", "at"`, insertIfChanged]);
    expect(returned).toEqual([{ actor: "returned", category: "seen", at: expect.any(Date) }]);
    expect(followed).toBe(1);
    const [none, notFollowed] = await direct.batch([Prisma.sql`UPDATE "AuditRecord" SET "category" = 'seen' WHERE "actor" = ${"nobody"} RETURNING "actor"`, insertIfChanged]);
    expect(none).toEqual([]);
    expect(notFollowed).toBe(0);
  });

  it("a batch is atomic: when a statement fails with a unique violation, the ones before it are undone", async () => {
    const { prisma, direct } = await directDatabase();
    await prisma.operation.create({ data: operationRow("op-taken", "key-taken") });
    const error = await thrown(() =>
      direct.batch([
        Prisma.sql`INSERT INTO "AuditRecord" ("actor", "actorKind", "action", "detail", "at") VALUES (${"undone"}, 'client', 'test', '{}', ${new Date()})`,
        Prisma.sql`INSERT INTO "Operation" ("id", "clientId", "idempotencyKey", "requestHash", "operation", "target", "arguments", "reason", "state", "revision", "presentationTitle", "presentationSummary", "updatedAt")
          VALUES ('op-other', 'client-a', 'key-taken', 'x', 'http.request', '{}', '{}', 'r', 'pending', 1, 't', 's', ${new Date()})`,
      ]),
    );
    expect(isUniqueViolation(error)).toBe(true);
    expect(await prisma.auditRecord.count({ where: { actor: "undone" } })).toBe(0);
  });

  it("a batch waits for an open transaction to end, and is not part of it", async () => {
    const { prisma, direct } = await directDatabase();
    let batch: Promise<unknown[]> | undefined;
    await prisma
      .$transaction(async (tx) => {
        await tx.auditRecord.create(audit("rolled-back"));
        batch = direct.batch([Prisma.sql`INSERT INTO "AuditRecord" ("actor", "actorKind", "action", "detail", "at") VALUES (${"after"}, 'client', 'test', '{}', ${new Date()})`]);
        throw new Error("roll back");
      })
      .catch(() => undefined);
    expect(await batch).toEqual([1]);
    expect(await prisma.auditRecord.findMany({ where: { actor: { in: ["rolled-back", "after"] } }, select: { actor: true } })).toEqual([{ actor: "after" }]);
  });
});

describe("the same data and errors as Prisma's own better-sqlite3 adapter", () => {
  it("rows written through either adapter read the same through both", async () => {
    const file = await migratedFile();
    const stock = await stockClient(file);
    const thread = threadClient(file);
    const nonce = new Uint8Array([0, 1, 2, 253, 254, 255, 0, 7, 8, 9, 10, 11]);
    for (const [writer, suffix] of [[stock, "stock"], [thread, "thread"]] as const) {
      await writer.operation.create({ data: { ...operationRow(`op-${suffix}`), terminalAt: new Date("2026-01-02T03:04:05.678Z"), result: { n: 1.5, list: [true, null] } } });
      await writer.sealedPayload.create({
        data: { id: `sealed-${suffix}`, clientId: "c", digest: "d", size: 12, nonce, ciphertext: Buffer.from("secret"), expiresAt: new Date(86_400_000) },
      });
      await writer.transferStream.create({ data: { id: `stream-${suffix}`, clientId: "c", transferId: suffix, size: 3, sha256: "s", expiresAt: new Date(0), complete: true } });
      await writer.event.create({ data: { kind: "test", clientId: "c", operationId: `op-${suffix}`, revision: 1, payload: { suffix } } });
    }
    const everything = (prisma: PrismaClient) =>
      Promise.all([
        prisma.operation.findMany({ orderBy: { id: "asc" } }),
        prisma.sealedPayload.findMany({ orderBy: { id: "asc" } }),
        prisma.transferStream.findMany({ orderBy: { id: "asc" } }),
        prisma.event.findMany({ orderBy: { seq: "asc" } }),
        prisma.event.aggregate({ _max: { seq: true }, _count: true }),
        prisma.$queryRaw`SELECT 9007199254740993 AS big, 42 AS small, 1.5 AS half, NULL AS absent, 'text' AS text`,
      ]);
    const [throughStock, throughThread] = [await everything(stock), await everything(thread)];
    expect(throughThread).toEqual(throughStock);
    expect(throughThread[0]).toHaveLength(2);
    expect(throughThread[0][1]?.terminalAt).toEqual(new Date("2026-01-02T03:04:05.678Z"));
    expect(Buffer.from(throughThread[1][1]!.nonce).equals(Buffer.from(nonce))).toBe(true);
    // Prisma's adapter cannot read bytes a raw query computes (it throws UnexpectedTypeError); this one can.
    const [computed] = await thread.$queryRaw<{ bytes: Uint8Array }[]>`SELECT x'00ff' AS bytes`;
    expect([...computed!.bytes]).toEqual([0, 255]);
  });

  it("constraint violations and bad SQL fail with the same Prisma errors", async () => {
    const file = await migratedFile();
    const stock = await stockClient(file);
    const thread = threadClient(file);
    await stock.operation.create({ data: operationRow("op-1", "key-1") });
    const failures = (prisma: PrismaClient) =>
      Promise.all([
        thrown(() => prisma.operation.create({ data: operationRow("op-2", "key-1") })),
        thrown(() => prisma.operation.create({ data: operationRow("op-1", "key-other") })),
        thrown(() => prisma.transferChunk.create({ data: { streamId: "no-such-stream", index: 0, data: new Uint8Array([1]) } })),
        thrown(() => prisma.$executeRawUnsafe(`INSERT INTO "Operation" ("id") VALUES ('op-null')`)),
        thrown(() => prisma.$queryRawUnsafe(`SELECT * FROM "NoSuchTable"`)),
        thrown(() => prisma.$queryRawUnsafe(`SELEKT 1`)),
      ]);
    const shape = (error: unknown) => {
      const { name, code, meta } = error as { name: string; code?: string; meta?: unknown };
      return { name, code, meta };
    };
    const [fromStock, fromThread] = [await failures(stock), await failures(thread)];
    expect(fromThread.map(shape)).toEqual(fromStock.map(shape));
    expect(fromThread.map((error) => (error as { code?: string }).code)).toEqual(["P2002", "P2002", "P2003", "P2010", "P2010", "P2010"]);
    for (const error of fromThread) {
      expect(isStorageError(error)).toBe(true);
      expect(isStorageUnavailable(error)).toBe(false);
    }
  });
});

describe("the thread's life", () => {
  it("a file that cannot be opened fails the connect with SQLite's error, recognisably the database's", async () => {
    const prisma = threadClient(dir); // a directory, not a file
    const error = await thrown(() => prisma.$connect());
    expect(error).toMatchObject({ name: "DriverAdapterError", cause: { originalCode: "SQLITE_CANTOPEN" } });
    expect(isStorageError(error)).toBe(true);
  });

  it("a thread that dies fails what it held as unavailable, and the next request runs on a new one", async () => {
    const file = await migratedFile();
    const exits: Error[] = [];
    const prisma = threadClient(file, { heapLimitMb: 16, onThreadExit: (error) => exits.push(error) });
    await prisma.auditRecord.create(audit("before"));

    let transactionError: unknown;
    const transaction = prisma.$transaction(async (tx) => {
      await tx.auditRecord.create(audit("in-flight"));
      // Rows far past the thread's 16 MB heap: the thread runs out of memory and ends.
      const crash = await thrown(() => prisma.$queryRaw`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n LIMIT 200) SELECT i, printf('%.*c', 1000000, 'x') AS filler FROM n`);
      expect(isStorageUnavailable(crash)).toBe(true);
      transactionError = await thrown(() => tx.auditRecord.create(audit("after-crash")));
    });
    await within(20_000, transaction.catch(() => undefined), "the transaction of a dead thread");
    expect(isStorageUnavailable(transactionError)).toBe(true);
    expect(exits).toHaveLength(1);
    expect(String(exits[0])).toContain("memory");

    expect(await within(20_000, prisma.auditRecord.findMany({ select: { actor: true } }), "a request after the crash")).toEqual([{ actor: "before" }]);
  });

  it("closing ends the thread: the WAL is checkpointed away and the file is free for another writer", async () => {
    const { prisma, file } = await axonClient();
    await prisma.auditRecord.create(audit("closing"));
    expect(existsSync(`${file}-wal`)).toBe(true);
    await prisma.$disconnect();
    expect(existsSync(`${file}-wal`)).toBe(false);
    const other = new Sqlite(file, { timeout: 0 });
    try {
      other.exec("BEGIN EXCLUSIVE; COMMIT;");
      expect(other.prepare(`SELECT count(*) AS n FROM "AuditRecord"`).get()).toEqual({ n: 1 });
    } finally {
      other.close();
    }
  });
});

