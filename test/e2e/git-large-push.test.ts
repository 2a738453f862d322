import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGitBroker, type GitBroker } from "../support/git-broker.js";

const MiB = 1024 * 1024;
const packMiB = 300;
/** Stored, not deflated, and streamed into packs as it is added: the test's own Git spends little time on 300 MiB. */
const fastGit = ["-c", "core.compression=0", "-c", "pack.compression=0", "-c", "core.bigFileThreshold=1m", "-c", "pack.window=0"];

/** The resident set of a process, from /proc, in bytes. */
function rssOf(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((entry) => entry.startsWith("VmRSS:"));
  return Number(/(\d+)/.exec(line ?? "")?.[1] ?? 0) * 1024;
}

/** Samples a process's RSS while `work` runs: the most it reached. */
async function peakRssDuring<T>(pid: number, work: () => Promise<T>): Promise<{ result: T; peak: number }> {
  let peak = rssOf(pid);
  const sampler = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 20);
  try {
    return { result: await work(), peak };
  } finally {
    clearInterval(sampler);
    peak = Math.max(peak, rssOf(pid));
  }
}

describe("a 300 MiB pack streams through Axon in bounded memory", () => {
  let broker: GitBroker;
  let tree: string;

  beforeAll(async () => {
    broker = await startGitBroker({ policy: { rules: [{ id: "alice", effect: "allow", clients: ["alice"], operations: ["git.*"] }] } });
    const seed = await broker.agent.repository("seed");
    await broker.host.createRepository("acme/big.git", seed);
    // A second copy whose main moved on to a commit the agent never saw: pushing over it rewrites history.
    await broker.host.createRepository("acme/rewritten.git", seed);
    await broker.agent.commit(seed, "elsewhere", { "elsewhere.txt": "moved on\n" });
    await broker.agent.git(["push", "-q", path.join(broker.host.root, "acme/rewritten.git"), "main"], { cwd: seed });
    tree = path.join(broker.agent.home, "big");
    await broker.agent.git(["clone", "-q", broker.remote("acme/big.git"), tree]);
    // Incompressible content, made here: 30 files of 10 MiB of random bytes.
    for (let file = 0; file < packMiB / 10; file++) writeFileSync(path.join(tree, `blob-${file}.bin`), randomBytes(10 * MiB));
    await broker.agent.git([...fastGit, "add", "-A"], { cwd: tree });
    await broker.agent.git(["commit", "-q", "-m", "300 MiB of data"], { cwd: tree });
  }, 180_000);
  afterAll(() => broker?.close());

  it("forwards a new branch while it arrives, and a history rewrite once its pack was read, Axon's memory flat both times", async () => {
    const pid = broker.axon.child.pid!;
    const before = rssOf(pid);
    const created = await peakRssDuring(pid, () => broker.agent.run([...fastGit, "push", "origin", "HEAD:refs/heads/data"], { cwd: tree }));
    expect(created.result.code, created.result.stderr).toBe(0);
    // Over a main the agent never saw: a rewrite whose whole pack is read for a proof it cannot give, spooled, then sent.
    const rewritten = await peakRssDuring(pid, () => broker.agent.run([...fastGit, "push", "--force", broker.remote("acme/rewritten.git"), "HEAD:main"], { cwd: tree }));
    expect(rewritten.result.code, rewritten.result.stderr).toBe(0);

    const head = await broker.agent.git(["rev-parse", "HEAD"], { cwd: tree });
    expect((await broker.host.refs("acme/big.git"))["refs/heads/data"]).toBe(head);
    expect((await broker.host.refs("acme/rewritten.git"))["refs/heads/main"]).toBe(head);
    // (Git's probe before a large push, a bare flush, is answered by Axon itself and decides nothing.)
    const pushes = (await broker.gitLog("git-receive-pack", 4)).filter((line) => line.operation !== undefined);
    expect(pushes.map((line) => line.operation)).toEqual(["git.push.branch_create", "git.push.force"]);
    for (const push of pushes) expect(Number(push.bytes_in)).toBeGreaterThan(packMiB * MiB);
    // Flat: what the process gained (mostly the garbage of pieces that passed, until V8 collects it) is well under the
    // pack it carried, for either push.
    for (const { peak } of [created, rewritten]) expect(peak - before).toBeLessThan(128 * MiB);
  }, 300_000);
});
