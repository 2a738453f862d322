import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { manualClock } from "../support/manual-clock.js";
import { operationsApi, secret } from "../support/operations.js";
import { createPostgresDatabase, type TestDatabase } from "../support/postgres-database.js";
import { ScriptedLlm } from "../support/scripted-llm/scripted-llm.js";
import { projectRoot, startTestServer, type TestServer } from "../support/server.js";

type Json = Record<string, any>;

const manifest = path.join(projectRoot, "test/fixtures/periodic/registries/manifest.hocon");
/** The client periodic runs are submitted as, with a secret so the test reads them as anyone would. */
const system = secret();

/**
 * The manifest's `periodic` schedules on replicas sharing PostgreSQL, every replica on one clock the test moves: each
 * tick is one agent.chat operation of the client `system`, whichever replicas look at it.
 */
describe("periodic schedules across replicas", () => {
  const clock = manualClock(new Date("2026-12-04T12:00:30Z"));
  let llm: ScriptedLlm;
  let database: TestDatabase;
  let env: Record<string, string>;
  const running = new Set<TestServer>();

  const start = async (extra: Record<string, string> = {}) => {
    const server = await startTestServer({ clock, env: { ...env, ...extra } });
    running.add(server);
    return server;
  };
  const stop = async (...servers: TestServer[]) => {
    for (const server of servers) {
      running.delete(server);
      await server.close();
    }
  };
  /** The runs so far, oldest first, each as it ended. */
  const runs = async (server: TestServer): Promise<Json[]> => {
    const api = operationsApi(server.url);
    const { body } = await api.json(await api.call("GET", "/api/agent/v1/operations?limit=50", system));
    const ended = await Promise.all((body.operations as Json[]).map((operation) => api.waitTerminal(system, operation.id)));
    return ended.reverse();
  };

  beforeAll(async () => {
    llm = await ScriptedLlm.start("openai");
    database = await createPostgresDatabase();
    const dir = mkdtempSync(path.join(os.tmpdir(), "axon-periodic-"));
    writeFileSync(path.join(dir, "clients"), `system = ${system}\n`, { mode: 0o600 });
    env = {
      ...llm.env,
      AGENT_MANIFEST_FILE: manifest,
      DATABASE_URL: database.url,
      AXON_CLIENTS_FILE: path.join(dir, "clients"),
      // The clock jumps by minutes: no replica may take another's lease for lapsed meanwhile.
      AXON_REPLICA_LEASE_SECONDS: "86400",
    };
  });
  afterAll(async () => {
    await stop(...running);
    await database?.drop();
    await llm?.close();
  });

  it("runs each tick of each interaction once, whichever replicas look, as agent.chat operations of the client system", async () => {
    const [first, second] = await Promise.all([start(), start()]);
    expect(first.registry.problems).toContainEqual(expect.objectContaining({ key: "chatty.hocon", reason: expect.stringContaining("not invoked by events"), severity: "warning" }));
    const look = () => Promise.all([first.periodicRuns.runDue(), second.periodicRuns.runDue(), first.periodicRuns.runDue()]);

    // Started at 12:00:30: the ticks before were not missed, the schedules did not exist yet.
    await look();
    expect(await runs(first)).toEqual([]);

    clock.set(new Date("2026-12-04T12:01:05Z"));
    await look();
    clock.set(new Date("2026-12-04T12:02:00Z"));
    await look();
    await look();

    const done = await runs(second);
    // 12:01's tick, then 12:02's two, created at one moment of the test's clock, in no particular order.
    expect(done.map((run) => run.state)).toEqual(["succeeded", "succeeded", "succeeded"]);
    expect(done[0]!.arguments.text).toBe("Tick");
    expect(done.slice(1).map((run) => run.arguments.text).sort()).toEqual(["Tick", "Tock"]);
    expect(done[0]).toMatchObject({
      client_id: "system",
      operation: "agent.chat",
      target: { network: "ticker" },
      arguments: { text: "Tick", sly_data: { beat: "minute" }, metadata: { user_id: "system" } },
      reason: "periodic run of ticker (*/1 * * * *)",
      result: { text: "Answer: Tick" },
    });
    expect(done.find((run) => run.arguments.text === "Tock")!.arguments.metadata).toEqual({ user_id: "clockwork" });
    expect(new Set(done.map((run) => run.idempotency_key)).size).toBe(3);
    expect(llm.requests.map((request) => request.request.messages.at(-1)?.content).sort()).toEqual(["Tick", "Tick", "Tock"]);
    await stop(first, second);
  });

  it("a tick missed while every replica was down runs once on return: the latest of those missed", async () => {
    llm.reset();
    clock.set(new Date("2026-12-04T12:07:10Z"));
    const returned = await start();
    await returned.periodicRuns.runDue();
    await returned.periodicRuns.runDue();
    const done = await runs(returned);
    // Created at one moment of the test's clock: in no particular order.
    expect(done.slice(3).map((run) => run.arguments.text).sort()).toEqual(["Tick", "Tock"]);
    expect(llm.requests).toHaveLength(2);
    await stop(returned);
  });

  it("with AXON_PERIODIC_MISSED_TICKS=skip, a replica back from a common outage waits for the next tick", async () => {
    llm.reset();
    clock.set(new Date("2026-12-04T12:09:30Z"));
    const returned = await start({ AXON_PERIODIC_MISSED_TICKS: "skip" });
    await returned.periodicRuns.runDue();
    expect(await runs(returned)).toHaveLength(5);

    clock.set(new Date("2026-12-04T12:10:00Z"));
    await returned.periodicRuns.runDue();
    expect((await runs(returned)).slice(5).map((run) => run.arguments.text).sort()).toEqual(["Tick", "Tock"]);
  });
});
