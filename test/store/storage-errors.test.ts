import net from "node:net";
import { Code } from "@connectrpc/connect";
import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AxonError } from "../../src/errors.js";
import { PrismaClient as PostgresPrismaClient } from "../../src/gen/prisma/postgres/client.js";
import { errorInfoOf, statusJson, toConnectError } from "../../src/server/status.js";
import { openDatabase, type Database } from "../../src/store/database.js";
import { isStorageError, isStorageUnavailable } from "../../src/store/storage-errors.js";
import { createPostgresDatabase, type TestDatabase } from "../support/postgres-database.js";
import { thrown } from "../support/thrown.js";

// Real errors from the real drivers: a port nobody listens on, sockets that close or never answer, a backend
// terminated by the server. (Stopping a whole server is test/e2e/postgres-restart.test.ts's job.)

/** A TCP server that does `onConnection` to every connection, on a port of its own. */
async function fakeServer(onConnection: (socket: net.Socket) => void) {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    onConnection(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    port,
    close: () => {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}


describe("storage errors", () => {
  let closedPort: number;
  let testDatabase: TestDatabase;
  let database: Database;

  beforeAll(async () => {
    const probe = await fakeServer(() => undefined);
    probe.close(); // now nothing listens there
    closedPort = probe.port;
    testDatabase = await createPostgresDatabase();
    database = await openDatabase(testDatabase.url);
  });
  afterAll(async () => {
    await database?.close();
    await testDatabase?.drop();
  });

  it("a refused connection through Prisma is UNAVAILABLE, category storage, with a retry hint and no host or password", async () => {
    const prisma = new PostgresPrismaClient({ adapter: new PrismaPg({ connectionString: `postgresql://axon:hunter2@127.0.0.1:${closedPort}/axon` }) });
    const error = await thrown(() => prisma.operation.count());
    await prisma.$disconnect();
    expect(isStorageUnavailable(error)).toBe(true);

    const mapped = toConnectError(error);
    expect(mapped.code).toBe(Code.Unavailable);
    expect(errorInfoOf(mapped)).toMatchObject({ reason: "STORAGE_UNAVAILABLE", metadata: { category: "storage" } });
    expect(mapped.metadata.get("retry-after")).toBe("1");
    const body = JSON.stringify(statusJson(mapped));
    expect(body).toContain("google.rpc.RetryInfo");
    for (const secretish of ["hunter2", "127.0.0.1", String(closedPort), "reach", "    at "]) expect(body).not.toContain(secretish);
  });

  it("pg's own refused, cut and unanswered connections are unavailable", async () => {
    const refused = await thrown(() => new pg.Client({ host: "127.0.0.1", port: closedPort }).connect());
    expect(refused).toMatchObject({ code: "ECONNREFUSED" });

    const hangsUp = await fakeServer((socket) => socket.end());
    const cut = await thrown(() => new pg.Client({ host: "127.0.0.1", port: hangsUp.port }).connect());
    hangsUp.close();
    expect(String(cut)).toContain("Connection terminated");

    const silent = await fakeServer(() => undefined);
    // Through a pool with a connect timeout, as Axon's requests reach the database.
    const pool = new pg.Pool({ host: "127.0.0.1", port: silent.port, connectionTimeoutMillis: 200 });
    const unanswered = await thrown(() => pool.query("SELECT 1"));
    await pool.end();
    // And a connection's own timeout, as each of Axon's pooled connections has.
    const unansweredClient = await thrown(() => new pg.Client({ host: "127.0.0.1", port: silent.port, connectionTimeoutMillis: 200 }).connect());
    silent.close();
    expect(String(unanswered)).toContain("timeout");
    expect(String(unansweredClient)).toContain("timeout expired");

    for (const error of [refused, cut, unanswered, unansweredClient]) {
      expect(isStorageUnavailable(error)).toBe(true);
      expect(toConnectError(error).code).toBe(Code.Unavailable);
    }
  });

  it("a query whose backend the server terminates (SQLSTATE 57P01) is unavailable", async () => {
    const sleeping = thrown(() => database.prisma.$queryRawUnsafe("SELECT 1 AS one FROM pg_sleep(10) /* axon-terminate-me */"));
    const admin = new pg.Client({ connectionString: testDatabase.url });
    await admin.connect();
    try {
      for (let terminated = 0; terminated === 0; ) {
        const result = await admin.query(
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%axon-terminate-me%' AND pid <> pg_backend_pid()",
        );
        terminated = result.rowCount ?? 0;
      }
    } finally {
      await admin.end();
    }
    const error = await sleeping;
    expect(JSON.stringify(error, (_key, value: unknown) => (typeof value === "bigint" ? String(value) : value))).toContain("57P01");
    expect(isStorageUnavailable(error)).toBe(true);
  });

  it("other database errors stay INTERNAL, labelled storage; everything else stays other", async () => {
    const syntax = await thrown(() => database.prisma.$queryRawUnsafe("SELEKT 1"));
    const division = await thrown(() => database.prisma.$queryRawUnsafe("SELECT 1 / 0 AS never"));
    for (const error of [syntax, division]) {
      expect(isStorageUnavailable(error)).toBe(false);
      expect(isStorageError(error)).toBe(true);
      const mapped = toConnectError(error);
      expect(mapped.code).toBe(Code.Internal);
      expect(mapped.rawMessage).toBe("internal error");
      expect(errorInfoOf(mapped)?.metadata.category).toBe("storage");
    }

    const bug = new TypeError("Cannot read properties of undefined (reading 'x')");
    expect(isStorageError(bug)).toBe(false);
    expect(errorInfoOf(toConnectError(bug))?.metadata.category).toBe("other");
    // An AxonError says what it is itself, whatever its cause.
    const refusal = new AxonError(Code.InvalidArgument, "BAD", "bad", { cause: new Error("Connection terminated unexpectedly") });
    expect(toConnectError(refusal).code).toBe(Code.InvalidArgument);
  });
});
