import { mkdirSync, mkdtempSync, rmSync, symlinkSync, unlinkSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runAxonProcessToExit, startAxonProcess, type AxonProcess } from "../support/axon-process.js";
import { alice, httpOp, operationsApi, roomyAdmission, startUpstream, writeFiles } from "../support/operations.js";
import { startPrivatePostgres, type PrivatePostgres } from "../support/private-postgres.js";
import { until } from "../support/wait.js";

/*
 * A replica started while its database is unreachable waits for it instead of exiting: alive, not ready (naming the
 * database), operations answered 503 STORAGE_UNAVAILABLE with Retry-After as during an outage, and ready by itself
 * once the database is back. A configuration waiting cannot fix still stops it at once, with one line.
 */
const policy = { rules: [{ id: "auto", effect: "allow", operations: ["http.request"] }] };
const shared = "postgresql://postgres@127.0.0.1:5432";

let upstream: Awaited<ReturnType<typeof startUpstream>>;
let files: ReturnType<typeof writeFiles>;
const scratch = mkdtempSync(path.join(os.tmpdir(), "axon-late-"));

beforeAll(async () => {
  upstream = await startUpstream();
  files = writeFiles(upstream.url, roomyAdmission, policy);
});

afterAll(() => {
  upstream?.close();
  if (files) rmSync(path.dirname(files.AXON_CLIENTS_FILE), { recursive: true, force: true });
  rmSync(scratch, { recursive: true, force: true });
});

const readiness = async (axon: AxonProcess) => {
  const response = await fetch(`${axon.url}/readyz`);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
};

/** Everything a replica waiting for its database must say about it. */
async function expectWaiting(axon: AxonProcess): Promise<void> {
  expect((await fetch(`${axon.url}/healthz`)).status).toBe(200);
  expect(await readiness(axon)).toEqual({ status: 503, body: { status: "not ready", reason: "waiting for the database" } });
  const submitted = await operationsApi(axon.url).post(alice, httpOp("while-waiting"));
  expect(submitted.status).toBe(503);
  expect(submitted.headers.get("retry-after")).toBe("1");
  expect(submitted.body.details[0]).toMatchObject({ reason: "STORAGE_UNAVAILABLE", metadata: { category: "storage", code: "operation_store_unavailable" } });
  // The same answer on Connect: every protocol meets the one pipeline.
  const connect = await fetch(`${axon.url}/axon.agent.v1.AgentOperationsService/GetOperation`, {
    method: "POST",
    headers: { authorization: `Bearer ${alice}`, "content-type": "application/json" },
    body: JSON.stringify({ id: "op_aaaaaaaaaaaaaaaaaaaaaaaa" }),
  });
  expect(connect.status).toBe(503);
  expect(((await connect.json()) as { code: string }).code).toBe("unavailable");
  const warnings = axon.logs.filter((line) => line.msg === "the database cannot be reached; waiting for it (not ready until then)");
  expect(warnings.length).toBeGreaterThanOrEqual(1);
  expect(warnings[0]).toMatchObject({ level: 40, category: "storage" });
}

async function expectServing(axon: AxonProcess, key: string): Promise<void> {
  const api = operationsApi(axon.url);
  const submitted = await api.post(alice, httpOp(key, `/late/${key}`));
  expect(submitted.status).toBe(202);
  expect(await api.waitTerminal(alice, submitted.body.id)).toMatchObject({ state: "succeeded", result: { status: 200 } });
}

describe("a replica started before its PostgreSQL database", () => {
  let postgres: PrivatePostgres;
  const replicas: AxonProcess[] = [];

  beforeAll(async () => {
    postgres = await startPrivatePostgres();
    await postgres.stop();
  }, 60_000);

  afterAll(async () => {
    await Promise.allSettled(replicas.map((axon) => axon.stop(2_000)));
    await postgres?.remove();
  });

  it("stays up, answers as in an outage, and is ready by itself once PostgreSQL starts, with the migrations applied then", async () => {
    const axon = await startAxonProcess({ ...files, DATABASE_URL: postgres.url });
    replicas.push(axon);
    await expectWaiting(axon);

    await postgres.start();
    await until(async () => (await readiness(axon)).status === 200, "the replica to become ready", 30_000);
    const opened = await until(() => axon.logs.find((line) => typeof line.migrations_applied === "number"), "the migrations logged");
    expect(opened?.migrations_applied).toBeGreaterThan(0);
    await expectServing(axon, "after-start");
    // Waiting is not failing: one warning per backoff step, no error.
    expect(axon.logs.filter((line) => Number(line.level) >= 50)).toEqual([]);
    await axon.stop();
  }, 90_000);

  // It tries every half second and serves before its pools fill: about a second on a quiet machine (the bound
  // is 2 s). The bound here leaves room for a machine running other suites beside this one.
  it("is ready within seconds of a restarted PostgreSQL accepting connections again, by itself", async () => {
    await postgres.stop().catch(() => undefined); // already stopped when run alone
    const axon = await startAxonProcess({ ...files, DATABASE_URL: postgres.url });
    replicas.push(axon);
    await until(() => axon.logs.some((line) => line.msg === "the database cannot be reached; waiting for it (not ready until then)"), "a warning");
    expect((await readiness(axon)).status).toBe(503);

    await postgres.start();
    const back = Date.now();
    await until(async () => (await readiness(axon)).status === 200, "the replica to become ready", 10_000);
    expect(Date.now() - back, JSON.stringify(axon.logs.slice(-8).map((line) => [line.time, line.msg]))).toBeLessThan(5_000);
    await expectServing(axon, "after-restart");
  }, 60_000);
});

describe("a replica started before its SQLite folder is usable", () => {
  it("waits for a volume that is not mounted yet, then serves from it", async () => {
    const volume = path.join(scratch, "volume");
    const mount = path.join(scratch, "mount");
    symlinkSync(volume, mount); // dangling: the folder is not there, and cannot be made through the link
    const axon = await startAxonProcess({ ...files, DATABASE_URL: `file:${path.join(mount, "data", "axon.db")}` });
    try {
      await expectWaiting(axon);
      mkdirSync(volume);
      await until(async () => (await readiness(axon)).status === 200, "the replica to become ready");
      await expectServing(axon, "after-mount");
    } finally {
      await axon.stop();
    }
  }, 60_000);

  it("waits for a folder that refuses new files (read-only) until a writable one takes its place", async () => {
    const folder = path.join(scratch, "read-only");
    // /proc refuses new files even to root: what a read-only mount does to an ordinary user.
    symlinkSync("/proc", folder);
    const axon = await startAxonProcess({ ...files, DATABASE_URL: `file:${path.join(folder, "axon.db")}` });
    try {
      await expectWaiting(axon);
      const writable = path.join(scratch, "writable");
      mkdirSync(writable);
      unlinkSync(folder);
      symlinkSync(writable, folder);
      await until(async () => (await readiness(axon)).status === 200, "the replica to become ready");
      await expectServing(axon, "after-remount");
    } finally {
      await axon.stop();
    }
  }, 60_000);
});

describe("a database configuration waiting cannot fix", () => {
  it.each([
    ["a database that does not exist", `${shared}/axon_no_such_database`, 'database "axon_no_such_database" does not exist'],
    ["a role the server refuses", "postgresql://axon_no_such_role@127.0.0.1:5432/postgres", 'role "axon_no_such_role" does not exist'],
    ["a URL of another database", "mysql://root@127.0.0.1/axon", "DATABASE_URL must start with file:, postgres:// or postgresql://"],
    ["a malformed URL", "postgresql://postgres:secret-password@[::1/axon", "Invalid URL"],
  ])("stops the process at once with one clear line: %s", async (_, databaseUrl, reason) => {
    const started = Date.now();
    const exited = await runAxonProcessToExit({ ...files, DATABASE_URL: databaseUrl });
    expect(exited.code).toBe(1);
    expect(Date.now() - started).toBeLessThan(10_000);
    const fatal = exited.logs.filter((line) => line.level === 60);
    expect(fatal).toHaveLength(1);
    expect(fatal[0]!.msg).toContain("cannot start: cannot open the database");
    expect(fatal[0]!.msg).toContain(reason);
    // No stack, no uncaught exception, no password.
    expect(exited.stderr).not.toMatch(/\n\s+at /);
    expect(JSON.stringify(exited.logs)).not.toContain("secret-password");
    expect(exited.logs.some((line) => typeof line.url === "string")).toBe(false);
  }, 30_000);
});
