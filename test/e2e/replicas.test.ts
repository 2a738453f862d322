import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { alice, httpOp, operationsApi, roomyAdmission, startUpstream, writeFiles } from "../support/operations.js";
import { createPostgresDatabase, type TestDatabase } from "../support/postgres-database.js";
import { ScriptedLlm } from "../support/scripted-llm/scripted-llm.js";
import { startTestServer, type TestServer } from "../support/server.js";

describe("two replicas sharing one PostgreSQL database", () => {
  let llm: ScriptedLlm;
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let database: TestDatabase;
  let first: TestServer;
  let second: TestServer;

  beforeAll(async () => {
    llm = await ScriptedLlm.start("openai");
    upstream = await startUpstream();
    database = await createPostgresDatabase();
    const env = { ...llm.env, ...writeFiles(upstream.url, roomyAdmission), DATABASE_URL: database.url };
    first = await startTestServer({ env });
    second = await startTestServer({ env });
  });
  afterAll(async () => {
    await Promise.all([first.close(), second.close()]);
    await database.drop();
    upstream.close();
    await llm.close();
  });

  it("a wait on one replica wakes on a change made on the other, and the operation runs exactly once", async () => {
    const onFirst = operationsApi(first.url);
    const onSecond = operationsApi(second.url);
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
    expect(upstream.received.filter((request) => request.url === "/across")).toHaveLength(1);
  });
});
