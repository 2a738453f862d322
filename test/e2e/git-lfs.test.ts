import { createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hostName, startGitBroker, type GitBroker } from "../support/git-broker.js";
import type { GitRun } from "../support/git.js";
import { alice, bob } from "../support/operations.js";

const policy = { rules: [{ id: "alice", effect: "allow", clients: ["alice"], operations: ["git.*"] }, { id: "bob-reads", effect: "allow", clients: ["bob"], operations: ["git.fetch", "git.lfs.read"] }] };

describe("Git LFS through Axon: the host's storage URLs and their signatures stay in Axon", () => {
  let broker: GitBroker;
  const runs: GitRun[] = [];
  const content = randomBytes(200_000);
  const oid = createHash("sha256").update(content).digest("hex");
  // Everything Git and git-lfs say of their HTTP traffic, for the assertions below.
  const traced = { GIT_TRACE: "1", GIT_CURL_VERBOSE: "1", GIT_TRANSFER_TRACE: "1" };

  beforeAll(async () => {
    broker = await startGitBroker({ policy });
    await broker.agent.git(["lfs", "install", "--skip-repo"]);
    await broker.host.createRepository("acme/media.git");
  });
  afterAll(() => broker?.close());

  const git = async (args: string[], cwd: string, env: Record<string, string> = {}) => {
    const run = await broker.agent.run(args, { cwd, env: { ...traced, ...env } });
    runs.push(run);
    return run;
  };

  it("uploads LFS objects on push, through capabilities Axon issued, to the host's storage", async () => {
    const tree = path.join(broker.agent.home, "media");
    await broker.agent.git(["clone", "-q", broker.remote("acme/media.git"), tree]);
    await broker.agent.git(["lfs", "track", "*.bin"], { cwd: tree });
    await broker.agent.commit(tree, "a model", { "model.bin": content });
    const run = await git(["push", "origin", "main"], tree);
    expect(run.code, run.stderr).toBe(0);
    expect(broker.host.lfsObjects.get(oid)?.equals(content)).toBe(true);
    const transfers = await broker.gitLog("lfs upload", 1);
    expect(transfers.at(-1)).toMatchObject({ client_id: "alice", operation: "git.lfs.write", decision: "capability", outcome: "ok", bytes_in: content.length });
    expect((await broker.gitLog("lfs batch", 1)).at(-1)).toMatchObject({ operation: "git.lfs.write", decision: "rule:alice", outcome: "ok" });
  });

  it("downloads them on clone, the same way", async () => {
    const tree = path.join(broker.agent.home, "media-copy");
    const run = await git(["clone", broker.remote("acme/media.git"), tree], broker.agent.home, { AXON_CLIENT_SECRET: bob });
    expect(run.code, run.stderr).toBe(0);
    expect(readFileSync(path.join(tree, "model.bin")).equals(content)).toBe(true);
    expect((await broker.gitLog("lfs download", 1)).at(-1)).toMatchObject({ client_id: "bob", operation: "git.lfs.read", outcome: "ok", bytes_out: content.length });
  });

  it("answers a batch with Axon's own URLs, each good for its client, object and method only", async () => {
    const batchUrl = `${broker.axon.url}/git/${hostName}/acme/media.git/info/lfs/objects/batch`;
    const batch = async (secret: string, body: unknown) =>
      fetch(batchUrl, { method: "POST", headers: { authorization: `Bearer ${secret}`, "content-type": "application/vnd.git-lfs+json", accept: "application/vnd.git-lfs+json" }, body: JSON.stringify(body) });
    const answered = await batch(bob, { operation: "download", objects: [{ oid, size: content.length }, { oid: "0".repeat(64), size: 1 }] });
    expect(answered.status).toBe(200);
    const body = (await answered.json()) as { objects: { oid: string; actions?: { download: { href: string; header?: unknown } }; error?: { code: number } }[] };
    const [object, missing] = body.objects;
    expect(missing).toMatchObject({ error: { code: 404 } });
    const href = object!.actions!.download.href;
    expect(href.startsWith(`${broker.axon.url}/git/${hostName}/acme/media.git/info/lfs/objects/`)).toBe(true);
    expect(object!.actions!.download.header).toBeUndefined();
    expect(JSON.stringify(body)).not.toMatch(new RegExp(broker.host.storageSecrets.join("|")));

    expect((await fetch(href, { headers: { authorization: `Bearer ${alice}` } })).status).toBe(404); // issued to bob
    expect((await fetch(href, { method: "PUT", body: "x" })).status).toBe(405);
    const downloaded = await fetch(href);
    expect(downloaded.status).toBe(200);
    expect(Buffer.from(await downloaded.arrayBuffer()).equals(content)).toBe(true);
    const capability = href.split("/").at(-1)!;
    expect((await fetch(`${broker.axon.url}/git/${hostName}/acme/other.git/info/lfs/objects/${capability}`)).status).toBe(404);
    // A capability is a bearer of authority: Axon's logs never name one.
    await broker.gitLog("lfs download", 2);
    expect(broker.everything()).not.toContain(capability);
    // bob may read, not write: an upload batch is refused before the host hears of it.
    const upload = await batch(bob, { operation: "upload", objects: [{ oid, size: content.length }] });
    expect(upload.status).toBe(403);
    expect(await upload.json()).toEqual({ message: "axon: LFS upload refused: no policy rule allows git.lfs.write" });
  });

  it("never lets Git, git-lfs or the logs see the host's token, its storage signatures or its storage header", () => {
    expect(runs.length).toBeGreaterThan(1);
    const seen = runs.map((run) => run.stdout + run.stderr).join("\n") + broker.everything();
    for (const secret of [broker.host.token, ...broker.host.storageSecrets]) expect(seen).not.toContain(secret);
    // The trace did show the traffic: the capability URLs, not the host's.
    expect(seen).toContain("/info/lfs/objects/batch");
  });
});
