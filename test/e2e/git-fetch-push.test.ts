import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGitBroker, type GitBroker } from "../support/git-broker.js";
import type { GitRun } from "../support/git.js";
import { bob } from "../support/operations.js";

/** alice may do anything Git does through Axon; bob may only fetch. */
const policy = {
  rules: [
    { id: "alice-writes", effect: "allow", clients: ["alice"], operations: ["git.*"] },
    { id: "bob-reads", effect: "allow", clients: ["bob"], operations: ["git.fetch"] },
  ],
};

describe("Git through Axon: clone, fetch and push with the credential kept in Axon", () => {
  let broker: GitBroker;
  const outputs: GitRun[] = [];
  let seed: string;

  beforeAll(async () => {
    broker = await startGitBroker({ policy });
    seed = await broker.agent.repository("seed", { "README.md": "# hello\n", "src.txt": "one\n" });
    await broker.host.createRepository("acme/widgets.git", seed);
  });
  afterAll(() => broker?.close());

  const git = async (args: string[], cwd?: string, env?: Record<string, string>) => {
    const run = await broker.agent.run(args, { ...(cwd ? { cwd } : {}), ...(env ? { env } : {}) });
    outputs.push(run);
    return run;
  };
  const workTree = (name: string) => path.join(broker.agent.home, name);

  it("clones with protocol v2 through Axon, the remote URL being the host's own and holding no credential", async () => {
    const run = await git(["clone", broker.remote("acme/widgets.git"), workTree("widgets")]);
    expect(run.code, run.stderr).toBe(0);
    expect(await broker.agent.git(["log", "--format=%s"], { cwd: workTree("widgets") })).toBe("first");
    expect(await broker.agent.git(["config", "remote.origin.url"], { cwd: workTree("widgets") })).toBe(broker.remote("acme/widgets.git"));
    // Every request reached the host through Axon, with Axon's credential; none came from the agent directly.
    expect(broker.host.requests.length).toBeGreaterThan(0);
    expect(broker.host.requests.every((request) => request.authorized)).toBe(true);
    expect(broker.host.requests.filter((request) => request.path.endsWith("/git-upload-pack")).map((request) => request.gitProtocol)).toContain("version=2");
    const served = await broker.gitLog("git-upload-pack", 1);
    expect(served.at(-1)).toMatchObject({ client_id: "alice", host: "scripted", repository: "acme/widgets", operation: "git.fetch", decision: "rule:alice-writes", outcome: "ok", upstream_status: 200 });
  });

  it("pushes a fast-forward, which lands as pushed", async () => {
    const id = await broker.agent.commit(workTree("widgets"), "second", { "src.txt": "two\n" });
    const run = await git(["push", "origin", "main"], workTree("widgets"));
    expect(run.code, run.stderr).toBe(0);
    expect((await broker.host.refs("acme/widgets.git"))["refs/heads/main"]).toBe(id);
    const pushed = await broker.gitLogWhere((line) => line.updates?.[0]?.new === id);
    expect(pushed).toMatchObject({ operation: "git.push.fast_forward", decision: "rule:alice-writes", outcome: "ok", upstream_status: 200 });
    expect(pushed?.updates).toEqual([{ ref: "refs/heads/main", old: expect.any(String), new: id, class: "git.push.fast_forward" }]);
    expect(Number(pushed?.bytes_in)).toBeGreaterThan(0);
  });

  it("fetches what another clone pushed, with protocol v0 too", async () => {
    await git(["clone", "-q", broker.remote("acme/widgets.git"), workTree("other")]);
    const id = await broker.agent.commit(workTree("other"), "third", { "src.txt": "three\n" });
    expect((await git(["push", "-q", "origin", "main"], workTree("other"))).code).toBe(0);
    const seen = broker.host.requests.length;
    const run = await git(["-c", "protocol.version=0", "fetch", "origin"], workTree("widgets"));
    expect(run.code, run.stderr).toBe(0);
    expect(broker.host.requests.slice(seen).map((request) => request.gitProtocol)).toEqual([undefined, undefined]);
    expect(await broker.agent.git(["rev-parse", "origin/main"], { cwd: workTree("widgets") })).toBe(id);
    await broker.agent.git(["merge", "-q", "--ff-only", "origin/main"], { cwd: workTree("widgets") });
  });

  it("creates and deletes a branch, and pushes a tag, each classified as such", async () => {
    const tree = workTree("widgets");
    await broker.agent.git(["checkout", "-q", "-b", "agent/feature"], { cwd: tree });
    const id = await broker.agent.commit(tree, "feature", { "feature.txt": "new\n" });
    expect((await git(["push", "-q", "origin", "agent/feature"], tree)).code).toBe(0);
    expect((await broker.host.refs("acme/widgets.git"))["refs/heads/agent/feature"]).toBe(id);
    await broker.agent.git(["tag", "-a", "v1.0", "-m", "release"], { cwd: tree });
    expect((await git(["push", "-q", "origin", "v1.0"], tree)).code).toBe(0);
    expect((await broker.host.refs("acme/widgets.git"))["refs/tags/v1.0"]).toBeDefined();
    expect((await git(["push", "-q", "origin", "--delete", "agent/feature"], tree)).code).toBe(0);
    expect((await broker.host.refs("acme/widgets.git"))["refs/heads/agent/feature"]).toBeUndefined();
    for (const [operation, ref] of [["git.push.branch_create", "refs/heads/agent/feature"], ["git.tag.create", "refs/tags/v1.0"], ["git.ref.delete", "refs/heads/agent/feature"]]) {
      expect(await broker.gitLogWhere((line) => line.operation === operation)).toMatchObject({ outcome: "ok", updates: [{ ref, class: operation }] });
    }
  });

  it("asks Git for credentials with a Basic challenge, and takes the secret as a bearer too", async () => {
    const url = `${broker.axon.url}/git/scripted/acme/widgets.git/info/refs?service=git-upload-pack`;
    const bare = await fetch(url);
    expect(bare.status).toBe(401);
    expect(bare.headers.get("www-authenticate")).toMatch(/^Basic realm="Axon"/);
    expect(await bare.text()).toMatch(/^axon: a valid Axon client secret is required/);
    const wrong = await fetch(url, { headers: { authorization: `Basic ${Buffer.from("x:not-a-secret").toString("base64")}` } });
    expect(wrong.status).toBe(401);
    const asBearer = await fetch(url, { headers: { authorization: `Bearer ${bob}` } });
    expect(asBearer.status).toBe(200);
    expect(asBearer.headers.get("content-type")).toBe("application/x-git-upload-pack-advertisement");
  });

  it("refuses a push by a client the policy lets only fetch, in Git's own words, with nothing sent to the host", async () => {
    const before = broker.host.requests.filter((request) => request.path.endsWith("/git-receive-pack")).length;
    const tree = workTree("widgets");
    await broker.agent.git(["checkout", "-q", "main"], { cwd: tree });
    await broker.agent.commit(tree, "bob's", { "bob.txt": "bob\n" });
    const run = await git(["push", "origin", "main"], tree, { AXON_CLIENT_SECRET: bob });
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain("! [remote rejected] main -> main (axon: push refused: no policy rule allows git.push.fast_forward)");
    expect(broker.host.requests.filter((request) => request.path.endsWith("/git-receive-pack")).length).toBe(before);
  });

  it("answers paths that name no configured host or repository with 404, never another of Axon's routes", async () => {
    const unknownHost = await fetch(`${broker.axon.url}/git/elsewhere/acme/widgets.git/info/refs?service=git-upload-pack`);
    expect(unknownHost.status).toBe(404);
    expect(await unknownHost.text()).toBe("axon: no Git host named elsewhere is configured\n");
    const notRepository = await fetch(`${broker.axon.url}/git/scripted/api/v1/list`);
    expect(notRepository.status).toBe(404);
  });

  it("never shows the host's token: not to Git, not in a log line, not in the database", async () => {
    expect(outputs.length).toBeGreaterThan(5);
    for (const run of outputs) expect(`${run.stdout}${run.stderr}`).not.toContain(broker.host.token);
    expect(broker.everything()).not.toContain(broker.host.token);
    expect(broker.everything()).not.toContain(Buffer.from(`x-access-token:${broker.host.token}`).toString("base64"));
  });
});
