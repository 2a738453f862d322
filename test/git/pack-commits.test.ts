import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { PackCommitReader, type PackCommit } from "../../src/git/pack-commits.js";
import { PushClassifier } from "../../src/git/push-classes.js";
import { gitSandbox, type GitSandbox } from "../support/git.js";

/** Feeds `pack` to a reader in pieces of the given sizes (cycled), as a socket would hand it over. */
async function readPack(pack: Buffer, pieces: number[] = [pack.length]): Promise<{ commits: PackCommit[]; reader: PackCommitReader }> {
  const commits: PackCommit[] = [];
  const reader = new PackCommitReader({ hash: "sha1", onCommit: (commit) => commits.push(commit) });
  for (let at = 0, index = 0; at < pack.length; index++) {
    const size = pieces[index % pieces.length]!;
    await reader.write(pack.subarray(at, at + size));
    at += size;
  }
  reader.end();
  return { commits, reader };
}

describe("the commits of a pack", () => {
  let sandbox: GitSandbox;
  let repo: string;
  const ids: string[] = [];

  beforeAll(async () => {
    sandbox = gitSandbox();
    repo = await sandbox.repository("history");
    ids.push(await sandbox.git(["rev-parse", "HEAD"], { cwd: repo }));
    // Long, alike messages: pack-objects stores most of these commits as deltas on one another.
    const message = randomBytes(3000).toString("base64");
    for (let i = 0; i < 8; i++) ids.push(await sandbox.commit(repo, `${message} ${i}`, { "counter.txt": `${i}\n`, [`blob-${i}.bin`]: randomBytes(i === 3 ? 400_000 : 2_000) }));
  });

  const pack = (revs: string, extra: string[] = []) => sandbox.bytes(["pack-objects", "--stdout", "--revs", "-q", "--window=50", ...extra], { cwd: repo, input: revs });

  it("finds every commit, with its parents, whether the pack arrives whole or a few bytes at a time", async () => {
    const bytes = await pack(`${ids.at(-1)}\n`);
    const expected = (await sandbox.git(["rev-list", "--parents", ids.at(-1)!], { cwd: repo })).split("\n").map((line) => {
      const [id, ...parents] = line.split(" ");
      return { id: id!, parents };
    });
    for (const pieces of [[bytes.length], [1, 2, 3, 5000], [7, 3, 1000], [65536]]) {
      const { commits, reader } = await readPack(bytes, pieces);
      expect(reader.complete).toBe(true);
      expect(commits.sort((a, b) => a.id.localeCompare(b.id))).toEqual(expected.sort((a, b) => a.id.localeCompare(b.id)));
    }
  });

  it("resolves commits stored as deltas on other commits of the pack", async () => {
    const bytes = await pack(`${ids.at(-1)}\n`);
    // git verify-pack lists a deltified object with its depth and base: the pack must hold such commits.
    const file = path.join(sandbox.home, "deltas.pack");
    writeFileSync(file, bytes);
    await sandbox.git(["index-pack", file], { cwd: repo });
    const listing = await sandbox.git(["verify-pack", "-v", file.replace(/\.pack$/, ".idx")], { cwd: repo });
    expect(listing.split("\n").filter((line) => / commit \d+ \d+ \d+ \d+ [0-9a-f]{40}$/.test(line)).length).toBeGreaterThan(0);
    const { commits } = await readPack(bytes, [4096]);
    expect(commits.map((commit) => commit.id).sort()).toEqual([...ids].sort());
  });

  it("reads a thin pack's own commits and leaves out what it only refers to", async () => {
    const bytes = await pack(`${ids.at(-1)}\n^${ids[4]}\n`, ["--thin"]);
    const { commits, reader } = await readPack(bytes, [333]);
    expect(reader.complete).toBe(true);
    expect(commits.map((commit) => commit.id).sort()).toEqual(ids.slice(5).sort());
  });

  it("calls a damaged pack unreadable and reports no commit it did not read whole", async () => {
    const bytes = Buffer.from(await pack(`${ids.at(-1)}\n`));
    bytes.fill(0xff, 40, 60);
    const { reader } = await readPack(bytes, [100]);
    expect(reader.unreadable).toBe(true);
    const truncated = await readPack((await pack(`${ids.at(-1)}\n`)).subarray(0, 500));
    expect(truncated.reader.complete).toBe(false);
  });

  it("proves a fast-forward from the pushed commits and calls a rewrite a force push", async () => {
    const forward = await readPack(await pack(`${ids.at(-1)}\n^${ids[2]}\n`));
    const zero = "0".repeat(40);
    const updates = [
      { ref: "refs/heads/main", oldId: ids[2]!, newId: ids.at(-1)! },
      { ref: "refs/heads/rewritten", oldId: ids[7]!, newId: ids[6]! },
      { ref: "refs/heads/new", oldId: zero, newId: ids[1]! },
      { ref: "refs/heads/gone", oldId: ids[1]!, newId: zero },
      { ref: "refs/tags/v1", oldId: zero, newId: ids[1]! },
      { ref: "refs/tags/v0", oldId: ids[0]!, newId: ids[1]! },
    ];
    const classifier = new PushClassifier(updates);
    expect(classifier.settled).toBe(false);
    for (const commit of forward.commits) classifier.addCommit(commit);
    expect(classifier.classified().map((update) => update.operation)).toEqual([
      "git.push.fast_forward",
      "git.push.force",
      "git.push.branch_create",
      "git.ref.delete",
      "git.tag.create",
      "git.tag.update",
    ]);
  });

  it("is settled as soon as the pack has proven every fast-forward, whatever order its commits come in", async () => {
    const { commits } = await readPack(await pack(`${ids.at(-1)}\n^${ids[0]}\n`));
    for (const order of [commits, [...commits].reverse()]) {
      const classifier = new PushClassifier([{ ref: "refs/heads/main", oldId: ids[0]!, newId: ids.at(-1)! }]);
      for (const commit of order) classifier.addCommit(commit);
      expect(classifier.settled).toBe(true);
    }
    const unproven = new PushClassifier([{ ref: "refs/heads/main", oldId: ids[0]!, newId: ids.at(-1)! }]);
    for (const commit of commits.filter((commit) => commit.id !== ids[3])) unproven.addCommit(commit);
    expect(unproven.classified()[0]!.operation).toBe("git.push.force");
  });
});

