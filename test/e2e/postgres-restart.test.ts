import { rm } from "node:fs/promises";
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAxonProcess, type AxonProcess } from "../support/axon-process.js";
import { alice, httpOp, operationsApi, roomyAdmission, startUpstream, writeFiles } from "../support/operations.js";
import { queryPostgres } from "../support/postgres-database.js";
import { startPrivatePostgres, type PrivatePostgres } from "../support/private-postgres.js";
import { ScriptedLlm } from "../support/scripted-llm/scripted-llm.js";
import { until } from "../support/wait.js";

type Json = Record<string, any>;
type Phase = "up" | "stopping" | "down" | "starting" | "back";

/** One request of the load, with the phase of the database when it started and when it settled. */
interface Outcome {
  replica: number;
  kind: "submit" | "get";
  key?: string;
  started: Phase;
  settled: Phase;
  status: number; // 0: no HTTP answer at all
  body?: Json;
  retryAfter?: string | null;
}

const loadPath = "/load";
const run = `restart-${Date.now().toString(36)}`;

const alive = (axon: AxonProcess) => axon.child.exitCode === null && axon.child.signalCode === null;

describe("PostgreSQL restarted under load", () => {
  let llm: ScriptedLlm;
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let postgres: PrivatePostgres | undefined;
  const replicas: AxonProcess[] = [];
  const dirs: string[] = [];

  let phase: Phase = "up";
  let loading = true;
  const outcomes: Outcome[] = [];
  const keysSubmitted: string[] = [];
  const ids: string[] = [];
  let load: Promise<void> | undefined;

  beforeAll(async () => {
    llm = await ScriptedLlm.start("openai");
    upstream = await startUpstream();
    postgres = await startPrivatePostgres();
    const files = writeFiles(upstream.url, roomyAdmission);
    dirs.push(path.dirname(files.AXON_CLIENTS_FILE));
    const env = () => {
      const dataDir = mkdtempSync(path.join(os.tmpdir(), "axon-restart-"));
      dirs.push(dataDir);
      return { ...llm.env, ...files, DATABASE_URL: postgres!.url, AXON_DATA_DIR: dataDir };
    };
    // One after the other, each kept as soon as it runs so that afterAll stops it whatever happens next.
    for (let i = 0; i < 2; i++) replicas.push(await startAxonProcess(env(), { startupMs: 30_000 }));
  }, 90_000);

  afterAll(async () => {
    loading = false;
    // Replicas first: a request of the load still waiting on one then fails at once instead of holding up the rest.
    await Promise.allSettled(replicas.map((axon) => axon.stop(2_000)));
    await load;
    await postgres?.remove();
    upstream?.close();
    await llm?.close();
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
  });

  /** Submits with fresh keys and reads back what it created, one request at a time per lane, until told to stop. */
  async function lane(replica: number, laneId: number): Promise<void> {
    const api = operationsApi(replicas[replica]!.url);
    for (let n = 0; loading; n++) {
      const key = `${run}-${replica}-${laneId}-${n}`;
      keysSubmitted.push(key);
      outcomes.push(await request(replica, "submit", () => api.call("POST", "/api/agent/v1/operations", alice, httpOp(key, loadPath)), key));
      const known = ids[Math.floor(Math.random() * ids.length)];
      if (known) outcomes.push(await request(replica, "get", () => api.call("GET", `/api/agent/v1/operations/${known}`, alice)));
    }
  }

  async function request(replica: number, kind: Outcome["kind"], send: () => Promise<Response>, key?: string): Promise<Outcome> {
    const started = phase;
    try {
      const response = await send();
      const body = (await response.json()) as Json;
      if (kind === "submit" && response.ok) ids.push(body.id as string);
      return { replica, kind, key, started, settled: phase, status: response.status, body, retryAfter: response.headers.get("retry-after") };
    } catch (error) {
      return { replica, kind, key, started, settled: phase, status: 0, body: { error: String(error) } };
    }
  }

  const served = (replica: number, from: Phase[]) => (outcome: Outcome) =>
    outcome.replica === replica && from.includes(outcome.started) && outcome.kind === "submit" && outcome.status >= 200 && outcome.status < 300;

  it("while it is down, every request on both replicas settles with 503 UNAVAILABLE (storage), and both stay up", async () => {
    load = Promise.all([0, 1].flatMap((replica) => [lane(replica, 0), lane(replica, 1)])).then(() => undefined);
    await until(() => [0, 1].every((replica) => outcomes.filter(served(replica, ["up"])).length >= 5), "both replicas serve the load", 30_000);

    phase = "stopping";
    await postgres!.stop();
    phase = "down";
    // Requests started after the stop must come back while the database is still down: that is the point.
    const settledWhileDown = (replica: number, kind: Outcome["kind"]) =>
      outcomes.filter((outcome) => outcome.replica === replica && outcome.kind === kind && outcome.started === "down" && outcome.settled === "down");
    await until(
      () => [0, 1].every((replica) => settledWhileDown(replica, "submit").length >= 3 && settledWhileDown(replica, "get").length >= 3),
      "submits and gets settle on both replicas while PostgreSQL is down",
      30_000,
    );

    const down = outcomes.filter((outcome) => outcome.started === "down");
    for (const outcome of down) {
      expect(outcome.status, JSON.stringify(outcome)).toBe(503);
      expect(outcome.retryAfter).toBe("1");
      expect(outcome.body).toMatchObject({
        code: 14,
        message: "storage unavailable",
        details: expect.arrayContaining([
          expect.objectContaining({
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            reason: "STORAGE_UNAVAILABLE",
            metadata: { category: "storage", code: "operation_store_unavailable" },
          }),
          expect.objectContaining({ "@type": "type.googleapis.com/google.rpc.RetryInfo" }),
        ]),
      });
    }
    // Whatever was in flight when it stopped failed the same way, or succeeded: never a 500, never without an answer.
    for (const outcome of outcomes) {
      expect([200, 201, 202, 503], JSON.stringify(outcome)).toContain(outcome.status);
      if (outcome.status === 503) {
        const text = JSON.stringify(outcome.body);
        for (const leak of ["127.0.0.1", String(postgres!.port), "postgres", "Prisma", "ECONN", "Connection terminated", "    at "]) {
          expect(text).not.toContain(leak);
        }
      }
    }
    expect(replicas.every(alive)).toBe(true);
    // Logs label these failures by category, as metrics do (Agent V1 §7).
    for (const axon of replicas) {
      await until(() => axon.logs.some((line) => line.code === "Unavailable" && line.category === "storage"), "a storage failure logged");
    }
  }, 90_000);

  it("once it is back, both replicas serve again without a restart", async () => {
    phase = "starting";
    await postgres!.start();
    phase = "back";
    await until(() => [0, 1].every((replica) => outcomes.some(served(replica, ["starting", "back"]))), "a submit succeeds on each replica", 30_000);
    loading = false;
    await load;
    expect(replicas.every(alive)).toBe(true);
    expect(outcomes.every((outcome) => outcome.status !== 500 && outcome.status !== 0)).toBe(true);
  }, 45_000);

  it("each replica listens again, so a wait on one wakes on an approval on the other, and the operation runs once", async () => {
    // Each logged the loss once and its recovery; only then can a notification reach it.
    const restored = () => replicas.every((axon) => axon.logs.some((line) => line.msg === "replica notifications restored"));
    await until(restored, "notifications restored", 15_000);
    for (const axon of replicas) {
      expect(axon.logs.filter((line) => line.msg === "replica notifications lost, reconnecting" && line.level === 40)).toHaveLength(1);
    }

    const [onFirst, onSecond] = replicas.map((axon) => operationsApi(axon.url));
    const submitted = await onFirst!.post(alice, httpOp(`${run}-after`, "/after-restart"));
    expect(submitted.body.state).toBe("pending");
    const started = performance.now();
    const waiting = onSecond!
      .call("GET", `/api/agent/v1/operations/${submitted.body.id}/events?after_revision=1&wait_seconds=30`, alice)
      .then((response) => onSecond!.json(response));
    const approved = await onFirst!.approve(submitted.body.id);
    expect(approved.status).toBe(200);
    const woken = await waiting;
    expect(woken.body.revision).toBeGreaterThan(1);
    // Woken by the approval, well before the wait's own 30 s.
    expect(performance.now() - started).toBeLessThan(20_000);

    const done = await onSecond!.waitTerminal(alice, submitted.body.id);
    expect(done.state).toBe("succeeded");
    expect(upstream.received.filter((request) => request.url === "/after-restart")).toHaveLength(1);
  }, 60_000);

  it("nothing is half-written: every key replays to exactly one operation, with its approval request and created event", async () => {
    const submits = outcomes.filter((outcome) => outcome.kind === "submit");
    const answered = new Map(submits.filter((outcome) => outcome.status < 300).map((outcome) => [outcome.key!, outcome.body!.id as string]));
    const unanswered = keysSubmitted.filter((key) => !answered.has(key));
    expect(unanswered.length).toBeGreaterThan(0); // the outage did cut into submits
    const api = operationsApi(replicas[0]!.url);
    for (const key of unanswered) {
      // The same request again: created now if the first never committed, replayed if it did.
      const replay = await api.post(alice, httpOp(key, loadPath));
      expect(replay.status, JSON.stringify(replay.body)).toBeLessThan(300);
      answered.set(key, replay.body.id as string);
    }
    for (const [key, id] of answered) {
      const replay = await api.post(alice, httpOp(key, loadPath));
      expect(replay.body.id).toBe(id);
    }

    const url = postgres!.url;
    const perKey = await queryPostgres<{ idempotencyKey: string; id: string; count: number }>(
      url,
      `SELECT "idempotencyKey", min(id) AS id, count(*)::int AS count FROM "Operation"
         WHERE "idempotencyKey" LIKE '${run}-%' AND "idempotencyKey" <> '${run}-after' GROUP BY 1`,
    );
    expect(perKey.filter((row) => row.count !== 1)).toEqual([]);
    expect(new Map(perKey.map((row) => [row.idempotencyKey, row.id]))).toEqual(answered);

    const pendingWithoutRequest = await queryPostgres(
      url,
      `SELECT o.id FROM "Operation" o WHERE o.state = 'pending' AND NOT EXISTS
         (SELECT 1 FROM "Grant" g WHERE g.id = o."approvalId" AND g."operationId" = o.id AND g.status = 'pending')`,
    );
    expect(pendingWithoutRequest).toEqual([]);
    const requestsWithoutOperation = await queryPostgres(
      url,
      `SELECT g.id FROM "Grant" g WHERE g."operationId" IS NOT NULL AND NOT EXISTS (SELECT 1 FROM "Operation" o WHERE o.id = g."operationId")`,
    );
    expect(requestsWithoutOperation).toEqual([]);
    const withoutCreatedEvent = await queryPostgres(
      url,
      `SELECT o.id FROM "Operation" o WHERE NOT EXISTS (SELECT 1 FROM "Event" e WHERE e."operationId" = o.id AND e.revision = 1)`,
    );
    expect(withoutCreatedEvent).toEqual([]);
    const pending = await queryPostgres<{ count: number }>(url, `SELECT count(*)::int AS count FROM "Operation" WHERE state = 'pending'`);
    expect(pending[0]!.count).toBe(answered.size);
    // Seconds after it succeeded, still no second execution by either replica.
    expect(upstream.received.filter((request) => request.url === "/after-restart")).toHaveLength(1);
    expect(upstream.received.filter((request) => request.url === loadPath)).toHaveLength(0);
  });
});
