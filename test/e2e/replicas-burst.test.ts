import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAxonProcess, type AxonProcess } from "../support/axon-process.js";
import { alice, chatOp, operationsApi, roomyAdmission, startUpstream, writeFiles } from "../support/operations.js";
import { createPostgresDatabase, queryPostgres, type TestDatabase } from "../support/postgres-database.js";
import { ScriptedLlm } from "../support/scripted-llm/scripted-llm.js";
import { until } from "../support/wait.js";

/*
 * 1,000 agent.chat submits at once over two replica processes on one PostgreSQL database, with the default lease
 * (15 s, a heartbeat every 5 s): far more submits than either replica's pool has connections, while executions run.
 * Submits may wait for a connection (up to 30 s); none may fail with the database healthy, and no replica's heartbeat
 * may queue behind them so long that the other replica reconciles its work.
 */
const submits = 1_000;

describe("a burst of 1,000 concurrent submits over two replicas", () => {
  let llm: ScriptedLlm;
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let database: TestDatabase;
  const replicas: AxonProcess[] = [];

  beforeAll(async () => {
    llm = await ScriptedLlm.start("openai");
    upstream = await startUpstream();
    database = await createPostgresDatabase();
    const env = { ...llm.env, ...writeFiles(upstream.url, roomyAdmission), DATABASE_URL: database.url };
    for (let i = 0; i < 2; i++) replicas.push(await startAxonProcess(env, { startupMs: 60_000 }));
  }, 120_000);

  afterAll(async () => {
    await Promise.allSettled(replicas.map((axon) => axon.stop(2_000)));
    await database?.drop();
    upstream?.close();
    await llm?.close();
  });

  it("answers every one 202, runs every chat to success, and reconciles nothing", async () => {
    const apis = replicas.map((axon) => operationsApi(axon.url));
    const answers = await Promise.all(
      Array.from({ length: submits }, (_, index) =>
        apis[index % 2]!.post(alice, chatOp(`burst-${index}`)).then(
          (answer) => ({ status: answer.status, reason: answer.body.details?.[0]?.reason as string | undefined }),
          (error: unknown) => ({ status: 0, reason: String(error) }),
        ),
      ),
    );
    const failed = answers.filter((answer) => answer.status !== 202);
    expect(failed, JSON.stringify(failed.slice(0, 5))).toEqual([]);

    type Row = { state: string; errorCode: string | null; n: number };
    const rows = await until(
      async () => {
        const counts = await queryPostgres<Row>(database.url, `SELECT state, "errorCode", count(*)::int AS n FROM "Operation" GROUP BY 1, 2`);
        const active = counts.filter((row) => ["pending", "approved", "executing"].includes(row.state));
        return active.length === 0 ? counts : undefined;
      },
      "every chat to finish",
      180_000,
    );
    const unsucceeded = await queryPostgres(database.url, `SELECT id, state, "errorCode", "errorMessage", "claimedBy", "claimedAt", "updatedAt" FROM "Operation" WHERE state <> 'succeeded' LIMIT 5`);
    const reconciled = replicas.map((axon) => axon.logs.filter((line) => line.msg === "reconciled an interrupted operation"));
    const late = replicas.map((axon) => axon.logs.filter((line) => line.msg === "replica lease renewed late"));
    expect(rows, JSON.stringify({ unsucceeded, reconciled, late })).toEqual([{ state: "succeeded", errorCode: null, n: submits }]);
    for (const [index, axon] of replicas.entries()) {
      expect(axon.child.exitCode).toBeNull();
      expect(reconciled[index]).toEqual([]);
    }
  }, 300_000);
});
