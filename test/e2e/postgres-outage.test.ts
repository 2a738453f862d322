import { rm } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAxonProcess, type AxonProcess } from "../support/axon-process.js";
import { alice, httpOp, operationsApi, roomyAdmission, startUpstream, writeFiles } from "../support/operations.js";
import { queryPostgres } from "../support/postgres-database.js";
import { startPrivatePostgres, type PrivatePostgres } from "../support/private-postgres.js";
import { until } from "../support/wait.js";

/*
 * Two replica processes execute operations an upstream holds; the database stops under them for longer than a lease,
 * the upstream answers meanwhile, then the database comes back. Nothing may die, nothing may run twice, and every
 * operation must end with the answer the upstream gave, not as `upstream_result_unknown`.
 */
const policy = { rules: [{ id: "auto", effect: "allow", operations: ["http.request"] }] };
// Long enough that a live replica, however busy the machine, renews its lease in time (every third of it).
const leaseSeconds = 5;
const held = 8;

const alive = (axon: AxonProcess) => axon.child.exitCode === null && axon.child.signalCode === null;

describe("PostgreSQL stopped under executions on two replicas", () => {
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let postgres: PrivatePostgres;
  const replicas: AxonProcess[] = [];
  let filesDir = "";

  beforeAll(async () => {
    upstream = await startUpstream();
    postgres = await startPrivatePostgres();
    const files = writeFiles(upstream.url, roomyAdmission, policy);
    filesDir = path.dirname(files.AXON_CLIENTS_FILE);
    const env = { ...files, DATABASE_URL: postgres.url, AXON_REPLICA_LEASE_SECONDS: String(leaseSeconds) };
    // One after the other, each kept as soon as it runs so that afterAll stops it whatever happens next.
    for (let i = 0; i < 2; i++) replicas.push(await startAxonProcess(env, { startupMs: 60_000 }));
  }, 120_000);

  afterAll(async () => {
    upstream?.release();
    await Promise.allSettled(replicas.map((axon) => axon.stop(2_000)));
    await postgres?.remove();
    upstream?.close();
    if (filesDir) await rm(filesDir, { recursive: true, force: true });
  });

  it("both replicas live through it, and each held execution reaches the upstream once and ends with the upstream's answer", async () => {
    const apis = replicas.map((axon) => operationsApi(axon.url));
    const paths = Array.from({ length: held }, (_, index) => `/outage/hold/${index}`);
    const ids: string[] = [];
    for (const [index, pathname] of paths.entries()) {
      const submitted = await apis[index % 2]!.post(alice, httpOp(`outage-${index}`, pathname));
      expect(submitted.status).toBe(202);
      ids.push(submitted.body.id as string);
    }
    await until(() => paths.every((pathname) => upstream.received.some((request) => request.url === pathname)), "every execution to reach the upstream");
    const claims = await queryPostgres<{ claimedBy: string }>(postgres.url, `SELECT DISTINCT "claimedBy" FROM "Operation" WHERE state = 'executing'`);
    expect(claims.length).toBe(2); // both replicas hold some

    await postgres.stop();
    // The upstream answers while the outcomes cannot be written.
    upstream.release();
    // Down for longer than a lease: every heartbeat is older than the lease by the time it is back. Both replicas
    // notice (a failed renewal each) and wait it out.
    const renewalFailed = (axon: AxonProcess) => axon.logs.some((line) => line.msg === "could not renew the replica lease");
    await until(() => {
      expect(replicas.every(alive), "both replicas alive").toBe(true);
      return replicas.every(renewalFailed);
    }, "both replicas to fail a lease renewal", 30_000);
    await new Promise((resolve) => setTimeout(resolve, 2 * leaseSeconds * 1000));
    expect(replicas.every(alive)).toBe(true);
    await postgres.start();

    for (const id of ids) {
      const done = await apis[0]!.waitTerminal(alice, id);
      expect(done, JSON.stringify(done)).toMatchObject({ state: "succeeded", result: { status: 200, body: { ok: true } } });
    }
    for (const pathname of paths) expect(upstream.received.filter((request) => request.url === pathname)).toHaveLength(1);
    expect(replicas.every(alive)).toBe(true);
    for (const axon of replicas) {
      expect(axon.logs.filter((line) => line.msg === "reconciled an interrupted operation")).toEqual([]);
    }
    // Each outcome was recorded once: one audit record and one terminal event per operation.
    const audits = await queryPostgres<{ n: number }>(postgres.url, `SELECT count(*)::int AS n FROM "AuditRecord" WHERE action = 'operation.succeeded'`);
    expect(audits[0]!.n).toBe(held);
    const events = await queryPostgres<{ n: number }>(postgres.url, `SELECT count(*)::int AS n FROM "Event" WHERE kind = 'operation.succeeded'`);
    expect(events[0]!.n).toBe(held);

    // And the service carries on.
    const after = await apis[1]!.post(alice, httpOp("outage-after", "/outage/after"));
    expect((await apis[0]!.waitTerminal(alice, after.body.id)).state).toBe("succeeded");
  }, 120_000);
});
