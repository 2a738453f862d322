import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hostName, startGitBroker, type GitBroker } from "../support/git-broker.js";
import type { GitRun } from "../support/git.js";
import { alice, bob } from "../support/operations.js";
import { until } from "../support/wait.js";

type Json = Record<string, any>;

/**
 * Rewriting history is refused on `main` and on every `legacy` repository, allowed on the agents' own branches, and
 * held for an operator anywhere else; fetches are open.
 */
const policy = {
  rules: [
    { id: "protect-main", effect: "deny", operations: ["git.push.force", "git.ref.delete"], targets: [{ kind: "repo", refs: ["refs/heads/main"] }] },
    { id: "no-rewrites-in-legacy", effect: "deny", operations: ["git.push.force"], targets: [{ kind: "repo", name: "legacy" }] },
    { id: "agent-branches", effect: "allow", operations: ["git.push.*", "git.ref.delete"], targets: [{ kind: "repo", refs: ["refs/heads/agent/*"] }] },
    { id: "reads", effect: "allow", operations: ["git.fetch"] },
    { id: "ask", effect: "request", operations: ["git.*"], grant_policy: { mode: "window", default_minutes: 60, max_minutes: 60, default_max_uses: 1, max_uses: 10 } },
  ],
};

describe("pushes through Axon, classified and decided as one before anything reaches the host", () => {
  let broker: GitBroker;
  const runs: GitRun[] = [];

  beforeAll(async () => {
    broker = await startGitBroker({ policy });
    const seed = await broker.agent.repository("seed", { "README.md": "# widgets\n" });
    await broker.agent.git(["branch", "release"], { cwd: seed });
    await broker.agent.git(["branch", "agent/work"], { cwd: seed });
    for (const repository of ["acme/widgets.git", "acme/gadgets.git", "acme/legacy.git"]) await broker.host.createRepository(repository, seed);
  });
  afterAll(() => broker?.close());

  const clone = async (repository: string, name: string) => {
    const tree = path.join(broker.agent.home, name);
    await broker.agent.git(["clone", "-q", broker.remote(repository), tree]);
    return tree;
  };
  const git = async (args: string[], cwd: string, env: Record<string, string> = {}) => {
    const run = await broker.agent.run(args, { cwd, env });
    runs.push(run);
    return run;
  };
  /** A commit that replaces the branch's last one: pushing it rewrites history. */
  const rewrite = async (tree: string, branch: string) => {
    await broker.agent.git(["checkout", "-q", branch], { cwd: tree });
    await broker.agent.git(["commit", "-q", "--amend", "-m", `rewritten ${branch} ${Math.random()}`], { cwd: tree });
    return broker.agent.git(["rev-parse", "HEAD"], { cwd: tree });
  };
  const receivePacks = () => broker.host.requests.filter((request) => request.method === "POST" && request.path.endsWith("/git-receive-pack")).length;

  it("allows a force push where a rule allows it", async () => {
    const tree = await clone("acme/widgets.git", "allowed");
    const id = await rewrite(tree, "agent/work");
    const run = await git(["push", "--force", "origin", "agent/work"], tree);
    expect(run.code, run.stderr).toBe(0);
    expect((await broker.host.refs("acme/widgets.git"))["refs/heads/agent/work"]).toBe(id);
    const line = await broker.gitLogWhere((entry) => entry.updates?.[0]?.new === id);
    expect(line).toMatchObject({ operation: "git.push.force", decision: "rule:agent-branches", outcome: "ok" });
  });

  it("refuses a force push a rule denies, with Git's own rejection naming the rule, and sends nothing upstream", async () => {
    const tree = await clone("acme/widgets.git", "denied");
    const before = (await broker.host.refs("acme/widgets.git"))["refs/heads/main"];
    const sent = receivePacks();
    await rewrite(tree, "main");
    const run = await git(["push", "--force", "origin", "main"], tree);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain(" ! [remote rejected] main -> main (axon: history rewrite refused by policy rule protect-main)");
    expect((await broker.host.refs("acme/widgets.git"))["refs/heads/main"]).toBe(before);
    expect(receivePacks()).toBe(sent);
  });

  it("holds a force push for an operator, says so on the terminal, and lands it once approved", async () => {
    const tree = await clone("acme/widgets.git", "held");
    const id = await rewrite(tree, "release");
    const pushing = git(["push", "--force", "origin", "release"], tree);
    const [request] = await broker.operator.waitForPending("widgets");
    expect(request).toMatchObject({ operation: "git.push.force", client_id: "alice", target: { kind: "repo", host: hostName, owner: "acme", name: "widgets", refs: ["refs/heads/release"] } });
    const { arguments: detail } = (await broker.operator.get(request!.id)).linked_operation;
    expect(detail.updates).toEqual([{ ref: "refs/heads/release", old: expect.any(String), new: id, class: "git.push.force" }]);
    // The operator approves exactly these bytes: the request is bound to the body's digest.
    expect(detail).toMatchObject({ body_bytes: expect.any(Number), body_sha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect((await broker.operator.decide("approve", request!.id)).status).toBe(200);
    const run = await pushing;
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain(`remote: waiting for operator approval (${request!.id})`);
    expect((await broker.host.refs("acme/widgets.git"))["refs/heads/release"]).toBe(id);
    expect(await broker.gitLogWhere((line) => line.decision === `approval:${request!.id}`)).toMatchObject({ outcome: "ok", upstream_status: 200 });
  });

  it("fails a held push the operator denies, with the operator's reason, and sends nothing upstream", async () => {
    const tree = await clone("acme/widgets.git", "held-denied");
    const before = (await broker.host.refs("acme/widgets.git"))["refs/heads/release"];
    const sent = receivePacks();
    await rewrite(tree, "release");
    const pushing = git(["push", "--force", "origin", "release"], tree);
    const [request] = await broker.operator.waitForPending("widgets");
    expect((await broker.operator.decide("deny", request!.id, { reason: "not on a Friday" })).status).toBe(200);
    const run = await pushing;
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain(" ! [remote rejected] release -> release (axon: history rewrite denied by an operator: not on a Friday)");
    expect((await broker.host.refs("acme/widgets.git"))["refs/heads/release"]).toBe(before);
    expect(receivePacks()).toBe(sent);
  });

  it("withdraws a held push whose client gives up (Ctrl-C), and sends nothing upstream", async () => {
    const tree = await clone("acme/widgets.git", "given-up");
    const sent = receivePacks();
    await rewrite(tree, "release");
    // A process group of its own: Ctrl-C reaches git and its remote helper, which holds the connection.
    const child = spawn("git", ["push", "--force", "origin", "release"], { cwd: tree, env: { ...broker.agent.env }, stdio: "ignore", detached: true });
    const [request] = await broker.operator.waitForPending("widgets");
    process.kill(-child.pid!, "SIGINT");
    const withdrawn = await until(async () => {
      const current = await broker.operator.get(request!.id);
      return current.status !== "pending" ? current : undefined;
    }, "the request withdrawn");
    expect(withdrawn).toMatchObject({ status: "canceled", linked_operation: { state: "canceled", error: { code: "operation_canceled" } } });
    expect(receivePacks()).toBe(sent);
  });

  it("decides an atomic two-ref push as one: a refused rewrite of one ref rejects both, and nothing lands", async () => {
    const tree = await clone("acme/legacy.git", "atomic");
    const before = await broker.host.refs("acme/legacy.git");
    const sent = receivePacks();
    await broker.agent.git(["checkout", "-q", "agent/work"], { cwd: tree });
    await broker.agent.commit(tree, "a fast-forward", { "work.txt": "work\n" });
    await rewrite(tree, "release");
    const run = await git(["push", "--atomic", "--force", "origin", "agent/work", "release"], tree);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain(" ! [remote rejected] agent/work -> agent/work (axon: history rewrite refused by policy rule no-rewrites-in-legacy)");
    expect(run.stderr).toContain(" ! [remote rejected] release -> release (axon: history rewrite refused by policy rule no-rewrites-in-legacy)");
    expect(await broker.host.refs("acme/legacy.git")).toEqual(before);
    expect(receivePacks()).toBe(sent);
    const line = await broker.gitLogWhere((entry) => entry.decision === "rule:no-rewrites-in-legacy");
    expect(line.updates.map((update: Json) => update.class)).toEqual(["git.push.fast_forward", "git.push.force"]);
  });

  it("refuses a push whole when a rule denies one of its refs, however the other refs would be decided", async () => {
    const tree = await clone("acme/widgets.git", "beside-main");
    const before = await broker.host.refs("acme/widgets.git");
    const sent = receivePacks();
    await rewrite(tree, "agent/work");
    await rewrite(tree, "main");
    // Not atomic: still one push, decided as one; the allowed agent branch does not carry the protected main along.
    const run = await git(["push", "--force", "origin", "agent/work", "main"], tree);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain(" ! [remote rejected] main -> main (axon: history rewrite refused by policy rule protect-main)");
    expect(run.stderr).toContain(" ! [remote rejected] agent/work -> agent/work (axon: history rewrite refused by policy rule protect-main)");
    expect(await broker.host.refs("acme/widgets.git")).toEqual(before);
    expect(receivePacks()).toBe(sent);
  });

  it("spends a window grant's uses one per push, and gives a use back when the host refuses the push", async () => {
    const api = (method: string, route: string, body?: unknown) =>
      fetch(broker.axon.url + route, { method, headers: { authorization: `Bearer ${alice}`, "content-type": "application/json" }, ...(body ? { body: JSON.stringify(body) } : {}) }).then(
        async (response) => ({ status: response.status, body: (await response.json()) as Json }),
      );
    const asked = await api("POST", "/api/grants", {
      client_request_id: "release-rewrites",
      operation: "git.push.force",
      target: { kind: "repo", host: hostName, owner: "acme", name: "gadgets", refs: ["refs/heads/release", "refs/heads/staging"] },
      reason: "rewrite release twice",
      minutes: 10,
      max_uses: 2,
    });
    expect(asked.status, JSON.stringify(asked.body)).toBe(201);
    expect((await broker.operator.decide("approve", asked.body.id)).status).toBe(200);

    // The host refuses commits that say so (a pre-receive hook): such a push spends no use.
    const hook = path.join(broker.host.root, "acme/gadgets.git/hooks/pre-receive");
    writeFileSync(hook, '#!/bin/sh\nwhile read old new ref; do git log -1 --format=%s "$new" | grep -q reject-me && { echo "no thanks" >&2; exit 1; }; done\nexit 0\n', { mode: 0o755 });
    const tree = await clone("acme/gadgets.git", "granted");
    const uses: number[] = [];
    for (const message of ["first", "reject-me", "second"]) {
      await rewrite(tree, "release");
      await broker.agent.git(["commit", "-q", "--amend", "-m", message], { cwd: tree });
      const run = await git(["push", "--force", "origin", "release"], tree);
      expect(run.code === 0, run.stderr).toBe(message !== "reject-me");
      if (message === "reject-me") expect(run.stderr).toContain("! [remote rejected] release -> release (pre-receive hook declined)");
      uses.push((await api("GET", `/api/grants/${asked.body.id}`)).body.used_count ?? 0);
    }
    expect(uses).toEqual([1, 1, 2]);
    // Used up: the third rewrite waits for an operator, who is not asked this time.
    await rewrite(tree, "release");
    const third = git(["push", "--force", "origin", "release"], tree);
    const [request] = await broker.operator.waitForPending("gadgets");
    expect(request!.id).not.toBe(asked.body.id);
    await broker.operator.decide("deny", request!.id, { reason: "enough" });
    expect((await third).code).not.toBe(0);
    expect((await api("GET", `/api/grants/${asked.body.id}`)).body).toMatchObject({ status: "consumed", used_count: 2 });
  });

  it("holds two pushes at once, each decided on its own", async () => {
    const first = await clone("acme/widgets.git", "first");
    const second = await clone("acme/gadgets.git", "second");
    const firstId = await rewrite(first, "release");
    await rewrite(second, "release");
    const gadgetsBefore = (await broker.host.refs("acme/gadgets.git"))["refs/heads/release"];
    const pushingFirst = git(["push", "--force", "origin", "release"], first);
    const pushingSecond = git(["push", "--force", "origin", "release"], second, { AXON_CLIENT_SECRET: bob });
    const pending = [...(await broker.operator.waitForPending("widgets")), ...(await broker.operator.waitForPending("gadgets"))];
    const byRepository = (name: string) => pending.find((request) => request.target.name === name)!;
    expect(byRepository("gadgets").client_id).toBe("bob");
    await broker.operator.decide("deny", byRepository("gadgets").id, { reason: "not bob" });
    await broker.operator.decide("approve", byRepository("widgets").id);
    const [firstRun, secondRun] = await Promise.all([pushingFirst, pushingSecond]);
    expect(firstRun.code, firstRun.stderr).toBe(0);
    expect(secondRun.code).not.toBe(0);
    expect(secondRun.stderr).toContain("(axon: history rewrite denied by an operator: not bob)");
    expect((await broker.host.refs("acme/widgets.git"))["refs/heads/release"]).toBe(firstId);
    expect((await broker.host.refs("acme/gadgets.git"))["refs/heads/release"]).toBe(gadgetsBefore);
  });

  it("does not send an approved push onto a ref that moved while it waited", async () => {
    const tree = await clone("acme/widgets.git", "moved");
    await rewrite(tree, "release");
    const pushing = git(["push", "--force", "origin", "release"], tree);
    const [request] = await broker.operator.waitForPending("widgets");
    // Meanwhile the branch moves on the host itself.
    const elsewhere = await clone("acme/widgets.git", "elsewhere");
    await broker.agent.git(["checkout", "-q", "release"], { cwd: elsewhere });
    const moved = await broker.agent.commit(elsewhere, "moved on", { "moved.txt": "moved\n" });
    await broker.agent.git(["push", "-q", path.join(broker.host.root, "acme/widgets.git"), "release"], { cwd: elsewhere });
    const sent = receivePacks();
    await broker.operator.decide("approve", request!.id);
    const run = await pushing;
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain("(axon: refs/heads/release moved upstream since this push was prepared (fetch, then push again))");
    expect((await broker.host.refs("acme/widgets.git"))["refs/heads/release"]).toBe(moved);
    expect(receivePacks()).toBe(sent);
    await until(async () => (await broker.operator.call("GET", `/api/operator/v1/requests/${request!.id}`)).body.linked_operation?.state === "failed", "the held push's operation failed");
  });

  it("never shows the host's token to Git, in the logs or in the database", () => {
    for (const run of runs) expect(`${run.stdout}${run.stderr}`).not.toContain(broker.host.token);
    expect(broker.everything()).not.toContain(broker.host.token);
  });
});
