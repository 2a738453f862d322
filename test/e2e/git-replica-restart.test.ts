import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAxonProcess, type AxonProcess } from "../support/axon-process.js";
import { operatorApi, startGitBroker, type GitBroker } from "../support/git-broker.js";
import { createPostgresDatabase, type TestDatabase } from "../support/postgres-database.js";
import { until } from "../support/wait.js";

/** Every push waits for an operator; fetches are open. Replicas share one PostgreSQL database. */
const policy = { rules: [{ id: "reads", effect: "allow", operations: ["git.fetch"] }, { id: "ask", effect: "request", operations: ["git.*"] }] };

describe("a push held on one replica of two sharing PostgreSQL: decided from the other, or failed cleanly when its replica stops", () => {
  let database: TestDatabase;
  let broker: GitBroker;
  let other: AxonProcess | undefined;
  let tree: string;
  let before: Record<string, string>;
  /** The pushes that reached the host: none but the approved one. */
  let landed = 0;

  beforeAll(async () => {
    database = await createPostgresDatabase();
    broker = await startGitBroker({
      policy,
      // Short, so that the killed replica's lease lapses within the test; a live replica renews it every third of it.
      env: { DATABASE_URL: database.url, AXON_REPLICA_LEASE_SECONDS: "5", AXON_SHUTDOWN_GRACE_SECONDS: "1" },
    });
    other = await startAxonProcess(broker.env, { startupMs: 60_000 });
    const seed = await broker.agent.repository("seed");
    await broker.host.createRepository("acme/widgets.git", seed);
    tree = path.join(broker.agent.home, "widgets");
    await broker.agent.git(["clone", "-q", broker.remote("acme/widgets.git"), tree]);
    before = await broker.host.refs("acme/widgets.git");
  }, 90_000);
  afterAll(async () => {
    await other?.stop();
    await broker?.close();
    await database?.drop();
  });

  const receivePacks = () => broker.host.requests.filter((request) => request.method === "POST" && request.path.endsWith("/git-receive-pack")).length;

  it("approved on the other replica: the push held on the first goes on and lands", async () => {
    const id = await broker.agent.commit(tree, "approved elsewhere", { "elsewhere.txt": "elsewhere\n" });
    const pushing = broker.agent.run(["push", "origin", "main"], { cwd: tree });
    const [request] = await broker.operator.waitForPending("widgets");
    const operator = operatorApi(other!.url);
    const approve = await operator.call("POST", `/api/operator/v1/requests/${request!.id}/approve`, { expected_revision: request!.revision });
    expect(approve.status).toBe(200);
    const run = await pushing;
    expect(run.code, run.stderr).toBe(0);
    expect((await broker.host.refs("acme/widgets.git"))["refs/heads/main"]).toBe(id);
    before = await broker.host.refs("acme/widgets.git");
    landed = receivePacks();
  }, 90_000);

  it("killed: Git reports the broken connection, the other replica fails the request once the lease lapses, and an approval comes too late", async () => {
    await broker.agent.commit(tree, "held", { "held.txt": "held\n" });
    const pushing = broker.agent.run(["push", "origin", "main"], { cwd: tree });
    const [request] = await broker.operator.waitForPending("widgets");
    broker.axon.child.kill("SIGKILL");
    const run = await pushing;
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(/RPC failed|remote end hung up|Empty reply|Connection reset|Recv failure/);

    const operator = operatorApi(other!.url);
    const failed = await until(async () => {
      const current = await operator.get(request!.id);
      return current.status !== "pending" ? current : undefined;
    }, "the other replica ends the abandoned push", 60_000);
    expect(failed.status).toBe("failed");
    expect(failed.linked_operation).toMatchObject({ state: "failed", error: { code: "native_call_interrupted" } });
    const approve = await operator.call("POST", `/api/operator/v1/requests/${request!.id}/approve`, { expected_revision: failed.revision });
    expect(approve.status).toBe(409);
    expect(await broker.host.refs("acme/widgets.git")).toEqual(before);
    expect(receivePacks()).toBe(landed);
  }, 90_000);

  it("stopped (SIGTERM): the push is rejected in Git's words once the grace period ends, and withdrawn", async () => {
    const restarted = await startAxonProcess(broker.env, { startupMs: 60_000 });
    // The agent now goes through the restarted replica.
    await broker.agent.git(["config", "--global", "--remove-section", `url.${broker.axon.url}/git/scripted/`]);
    await broker.agent.git(["config", "--global", `url.${restarted.url}/git/scripted/.insteadOf`, `${broker.host.url}/`]);
    await broker.agent.git(["config", "--global", `credential.${restarted.url}.helper`, '!f() { test "$1" = get && echo username=axon && echo "password=$AXON_CLIENT_SECRET"; }; f']);
    const operator = operatorApi(restarted.url);
    const pushing = broker.agent.run(["push", "origin", "main"], { cwd: tree });
    const [request] = await operator.waitForPending("widgets");
    const stopped = restarted.stop(15_000);
    const run = await pushing;
    expect(await stopped).toBe(0);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain(" ! [remote rejected] main -> main (axon: the server is restarting before the push was decided: push again)");
    const ended = await operatorApi(other!.url).get(request!.id);
    expect(ended.linked_operation.state).toBe("canceled");
    expect(await broker.host.refs("acme/widgets.git")).toEqual(before);
    expect(receivePacks()).toBe(landed);
  }, 90_000);
});
