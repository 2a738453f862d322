import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAxonProcess, type AxonProcess } from "../support/axon-process.js";
import { alice, bob, carol, httpOp, operationsApi, roomyAdmission, startUpstream, writeFiles } from "../support/operations.js";
import { createPostgresDatabase, queryPostgres, type TestDatabase } from "../support/postgres-database.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { until } from "../support/wait.js";

/*
 * Replicas are separate `npm start` processes sharing one fresh PostgreSQL database, as they would be deployed.
 * Operations under `/auto/` are allowed outright (approved at submission, so they go straight to the workers);
 * everything else asks an operator.
 */
const policy = {
  rules: [
    { id: "auto", effect: "allow", operations: ["http.request"], targets: [{ path: "/auto/*" }] },
    { id: "ask", effect: "request", operations: ["http.request"] },
  ],
};
// Short, so that the killed replica's lease lapses within the test; long enough that a live replica, however busy the
// machine, renews it in time (every third of it). At 2 s, a run beside another full test suite failed some of the 500
// operations below, as a lapsed live lease would.
const leaseSeconds = 5;

type Upstream = Awaited<ReturnType<typeof startUpstream>>;
type Api = ReturnType<typeof operationsApi>;

/** The id a replica's worker leases under, from the line it logs once it holds its lease (after readiness). */
function replicaId(axon: AxonProcess): Promise<string> {
  return until(() => {
    const replica = axon.logs.find((line) => line.msg === "execution worker started")?.replica;
    return typeof replica === "string" ? replica : undefined;
  }, "the execution worker's start-up line");
}

/** Starts replicas side by side, each kept in `started` as soon as it runs, so that afterAll stops it whatever fails. */
function startReplicas(env: Record<string, string>, count: number, started: AxonProcess[]): Promise<AxonProcess[]> {
  return Promise.all(
    Array.from({ length: count }, async () => {
      const axon = await startAxonProcess(env, { startupMs: 60_000 });
      started.push(axon);
      return axon;
    }),
  );
}

/** Runs `work` over `items` with at most `concurrency` in flight. */
async function pool<T, R>(items: T[], concurrency: number, work: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) {
        const index = next++;
        results[index] = await work(items[index]!, index);
      }
    }),
  );
  return results;
}

const timesReceived = (upstream: Upstream, path: string) => upstream.received.filter((request) => request.url === path).length;

describe("two replica processes sharing one PostgreSQL database", () => {
  let upstream: Upstream;
  let database: TestDatabase;
  let env: Record<string, string>;
  const processes: AxonProcess[] = [];
  let first: AxonProcess;
  let second: AxonProcess;
  let onFirst: Api;
  let onSecond: Api;

  beforeAll(async () => {
    upstream = await startUpstream();
    database = await createPostgresDatabase();
    env = { ...writeFiles(upstream.url, roomyAdmission, policy), DATABASE_URL: database.url, AXON_REPLICA_LEASE_SECONDS: String(leaseSeconds) };
    [first, second] = (await startReplicas(env, 2, processes)) as [AxonProcess, AxonProcess];
    onFirst = operationsApi(first.url);
    onSecond = operationsApi(second.url);
  });
  afterAll(async () => {
    upstream?.release();
    await Promise.all(processes.map((axon) => axon.stop(2000)));
    await database?.drop();
    upstream?.close();
  });

  it("a wait on one replica wakes on a change made on the other, and the operation runs exactly once", async () => {
    const submitted = await onFirst.post(alice, httpOp("replicas-wake", "/across"));
    expect(submitted.body.state).toBe("pending");

    // The wait may last 30 s; it must come back because of the approval on the other replica, not its timeout.
    const started = performance.now();
    const waiting = onSecond
      .call("GET", `/api/agent/v1/operations/${submitted.body.id}/events?after_revision=1&wait_seconds=30`, alice)
      .then((response) => onSecond.json(response));
    await onFirst.approve(submitted.body.id);
    const woken = await waiting;
    expect(woken.body.revision).toBeGreaterThan(1);
    expect(performance.now() - started).toBeLessThan(25_000);

    const done = await onSecond.waitTerminal(alice, submitted.body.id);
    expect(done.state).toBe("succeeded");
    expect(timesReceived(upstream, "/across")).toBe(1);
  });

  it("500 approved operations, submitted to both replicas at once, each execute exactly once, shared between them", async () => {
    const keys = Array.from({ length: 500 }, (_, index) => `bulk-${index}`);
    const submitted = await pool(keys, 32, async (key, index) => {
      const { status, body } = await (index % 2 === 0 ? onFirst : onSecond).post(alice, httpOp(key, `/auto/${key}`));
      expect(status).toBe(202);
      expect(body.state).toBe("approved");
      return body.id as string;
    });

    type Row = { state: string; errorCode: string | null; claimedBy: string; n: number };
    const rows = await until(async () => {
      const counts = await queryPostgres<Row>(
        database.url,
        `SELECT state, "errorCode", "claimedBy", count(*)::int AS n FROM "Operation" WHERE "idempotencyKey" LIKE 'bulk-%' GROUP BY 1, 2, 3`,
      );
      const terminal = counts.filter((row) => row.state === "succeeded" || row.state === "failed").reduce((sum, row) => sum + row.n, 0);
      return terminal === keys.length ? counts : undefined;
    }, "500 operations to finish", 120_000);

    expect(rows.filter((row) => row.state !== "succeeded")).toEqual([]);
    for (const key of keys) expect(timesReceived(upstream, `/auto/${key}`)).toBe(1);
    // Both replicas executed some: the work is shared, and no operation was claimed twice.
    const byReplica = Object.fromEntries(rows.map((row) => [row.claimedBy, row.n]));
    expect(Object.keys(byReplica).sort()).toEqual([await replicaId(first), await replicaId(second)].sort());
    const audits = await queryPostgres<{ n: number }>(
      database.url,
      `SELECT count(*)::int AS n FROM "AuditRecord" WHERE action = 'operation.succeeded' AND "operationId" = ANY('{${submitted.join(",")}}')`,
    );
    expect(audits[0]!.n).toBe(keys.length);
  }, 180_000);

  it("a replica killed with SIGKILL mid-execution: the other reconciles its operations once its lease lapses, never re-running them, and nobody touches the survivor's", async () => {
    // Operations the upstream holds stay executing, claimed by whichever replica won each. Submit until both hold
    // some: a replica runs at most 8 at once, so the other must claim by the 17th at the latest.
    const paths: string[] = [];
    const ids: string[] = [];
    type Claim = { id: string; claimedBy: string; state: string };
    let claims: Claim[] = [];
    while (new Set(claims.map((claim) => claim.claimedBy)).size < 2) {
      expect(ids.length).toBeLessThan(17);
      const path = `/auto/hold/${ids.length}`;
      ids.push((await (ids.length % 2 === 0 ? onFirst : onSecond).post(alice, httpOp(`kill-${ids.length}`, path))).body.id as string);
      paths.push(path);
      await until(() => timesReceived(upstream, path) === 1, `${path} to reach the upstream`);
      claims = await queryPostgres<Claim>(database.url, `SELECT id, "claimedBy", state FROM "Operation" WHERE "idempotencyKey" LIKE 'kill-%'`);
    }
    expect(claims.every((row) => row.state === "executing")).toBe(true);
    const [firstId, secondId] = [await replicaId(first), await replicaId(second)];
    const killedOnes = claims.filter((row) => row.claimedBy === firstId).map((row) => row.id);
    const survivorsOnes = claims.filter((row) => row.claimedBy === secondId).map((row) => row.id);
    expect(killedOnes.length + survivorsOnes.length).toBe(ids.length);

    first.child.kill("SIGKILL");
    for (const id of killedOnes) {
      const done = await onSecond.waitTerminal(alice, id);
      expect(done).toMatchObject({ state: "failed", error: { code: "upstream_result_unknown" } });
    }

    // The killed replica comes back (a new process, a new lease). Over two lease periods, neither it nor the survivor
    // may take the survivor's executions, which are still waiting on the upstream.
    const restarted = await startAxonProcess(env, { startupMs: 60_000 });
    processes.push(restarted);
    await new Promise((resolve) => setTimeout(resolve, 2 * leaseSeconds * 1000));
    for (const id of survivorsOnes) expect((await onSecond.get(alice, id)).body.state).toBe("executing");

    upstream.release();
    for (const id of survivorsOnes) expect((await operationsApi(restarted.url).waitTerminal(alice, id)).state).toBe("succeeded");
    for (const path of paths) expect(timesReceived(upstream, path)).toBe(1);

    // The service carries on: a new operation submitted to the restarted replica runs once.
    const after = await operationsApi(restarted.url).post(alice, httpOp("after-kill", "/auto/after-kill"));
    expect((await onSecond.waitTerminal(alice, after.body.id)).state).toBe("succeeded");
    expect(timesReceived(upstream, "/auto/after-kill")).toBe(1);
  }, 90_000);
});

describe("admission limits across two replica processes", () => {
  // Exact limits: 10 pending approvals per client, 15 active operations in all, and carol may submit 3 per window.
  // Windows are fixed (they start at multiples of their length since the epoch), and a burst that straddles a
  // window's end is admitted 3 more in the next one, so carol's window is the longest there is: it ends at
  // 2038-01-19T03:14:07Z, which no run of this test crosses.
  const carolsWindowSeconds = 2_147_483_647;
  const admission = {
    ...roomyAdmission,
    client_pending: 10,
    global_active: 15,
    clients: { carol: { requests_per_window: 3, window_seconds: carolsWindowSeconds } },
  };
  let upstream: Upstream;
  let database: TestDatabase;
  const replicas: AxonProcess[] = [];

  beforeAll(async () => {
    upstream = await startUpstream();
    database = await createPostgresDatabase();
    await startReplicas({ ...writeFiles(upstream.url, admission), DATABASE_URL: database.url }, 2, replicas);
  });
  afterAll(async () => {
    await Promise.all(replicas.map((axon) => axon.stop(2000)));
    await database?.drop();
    upstream?.close();
  });

  /** Fires `count` submits of one client at once, alternating replicas; answers how many were admitted. */
  async function burst(token: string, prefix: string, count: number, retryAfter: (value: number) => boolean) {
    const answers = await Promise.all(
      Array.from({ length: count }, (_, index) => operationsApi(replicas[index % 2]!.url).post(token, httpOp(`${prefix}-${index}`, `/${prefix}/${index}`))),
    );
    for (const refused of answers.filter((answer) => answer.status !== 202)) {
      expect(refused.status).toBe(429);
      expect(retryAfter(Number(refused.headers.get("retry-after")))).toBe(true);
      expect(refused.body.details[0]).toMatchObject({ reason: expect.any(String), metadata: { category: "rate_limited" } });
    }
    return answers.filter((answer) => answer.status === 202).length;
  }

  it("hold exactly, whichever replica each submit reaches: a client's rate, its pending limit, then the global active limit", async () => {
    const windowMs = carolsWindowSeconds * 1000;
    const secondsToWindowEnd = () => Math.ceil((windowMs - (Date.now() % windowMs)) / 1000);
    const atStart = secondsToWindowEnd();
    // The seconds left when the server refused: no more than at the start, no fewer than now.
    const toWindowEnd = (seconds: number) => seconds <= atStart && seconds >= secondsToWindowEnd();
    const capacity = (seconds: number) => seconds === 2;
    expect(await burst(carol, "c", 50, toWindowEnd)).toBe(3); // carol's 3 a window
    expect(await burst(alice, "a", 100, capacity)).toBe(10); // alice's 10 pending approvals
    expect(await burst(bob, "b", 100, capacity)).toBe(2); // 15 active in all
    const counts = await queryPostgres<{ operations: number; pending: number }>(
      database.url,
      `SELECT (SELECT count(*)::int FROM "Operation") AS operations, (SELECT count(*)::int FROM "Grant" WHERE status = 'pending') AS pending`,
    );
    // A refusal creates nothing: no operation, no approval.
    expect(counts[0]).toEqual({ operations: 15, pending: 15 });
    expect(upstream.received).toHaveLength(0);
  });
});

describe("two in-process replicas on one PostgreSQL: the sweeper and the event feed", () => {
  let upstream: Upstream;
  let database: TestDatabase;
  let replicas: TestServer[] = [];

  beforeAll(async () => {
    upstream = await startUpstream();
    database = await createPostgresDatabase();
    const env = { ...writeFiles(upstream.url, roomyAdmission), DATABASE_URL: database.url };
    replicas = await Promise.all([startTestServer({ env }), startTestServer({ env })]);
  });
  afterAll(async () => {
    await Promise.all(replicas.map((replica) => replica.close()));
    await database?.drop();
    upstream?.close();
  });

  it("expires each overdue approval once, whichever replica gets there first", async () => {
    const api = operationsApi(replicas[0]!.url);
    const ids = await Promise.all(Array.from({ length: 30 }, async (_, index) => (await api.post(alice, httpOp(`sweep-${index}`, `/sweep/${index}`))).body.id as string));
    await queryPostgres(database.url, `UPDATE "Grant" SET "expiresAt" = now() - interval '1 minute'`);

    // Both sweep the same overdue approvals concurrently, twice over.
    const swept = await Promise.all([...replicas, ...replicas].map((replica) => replica.operations.broker.sweep()));
    expect(swept.reduce((sum, count) => sum + count, 0)).toBe(ids.length);
    for (const id of ids) expect((await api.get(alice, id)).body).toMatchObject({ state: "expired", error: { code: "operation_approval_expired" } });
    const audits = await queryPostgres<{ n: number }>(database.url, `SELECT count(*)::int AS n FROM "AuditRecord" WHERE action = 'request.expired'`);
    expect(audits[0]!.n).toBe(ids.length);
  });

  it("delivers events in seq order even when a lower seq commits after a higher one", async () => {
    // A transaction takes a seq and holds it uncommitted while another replica commits a later event.
    const slow = new pg.Client({ connectionString: database.url });
    await slow.connect();
    const abort = new AbortController();
    try {
      await slow.query("BEGIN");
      const inserted = await slow.query<{ seq: number }>(`INSERT INTO "Event" (kind, "clientId", payload) VALUES ('test.slow', 'alice', '{}') RETURNING seq`);
      const held = Number(inserted.rows[0]!.seq);

      const delivered: number[] = [];
      const feed = (async () => {
        for await (const event of replicas[0]!.operations.broker.events(held - 1, abort.signal)) delivered.push(event.seq);
      })();
      await operationsApi(replicas[1]!.url).post(alice, httpOp("feed-order", "/feed/order"));
      await new Promise((resolve) => setTimeout(resolve, 1000));
      expect(delivered).toEqual([]); // nothing past the missing seq while it may still come

      await slow.query("COMMIT");
      await until(() => delivered.length >= 2, "the feed to catch up");
      expect(delivered).toEqual([held, held + 1]);
      abort.abort();
      await feed;
    } finally {
      abort.abort();
      await slow.end();
    }
  });
});
