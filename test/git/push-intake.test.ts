import { createHash } from "node:crypto";
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import zlib from "node:zlib";
import { describe, expect, it } from "vitest";
import { FLUSH, pktLine } from "../../src/git/pkt-line.js";
import { PushIntake } from "../../src/git/push-intake.js";
import { Spool } from "../../src/git/spool.js";
import type { HttpRequest } from "../../src/server/listener.js";
import { gitSandbox } from "../support/git.js";

/** A request body as the server hands it over: pieces of `bytes`, with the headers a client sent. */
function request(bytes: Buffer, headers: Record<string, string>, pieceBytes = 1000): HttpRequest {
  const pieces: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += pieceBytes) pieces.push(bytes.subarray(at, at + pieceBytes));
  return Object.assign(Readable.from(pieces), { headers, complete: true }) as unknown as HttpRequest;
}

async function spooled(spool: Spool): Promise<Buffer> {
  const pieces: Uint8Array[] = [];
  for await (const piece of spool.read()) pieces.push(piece);
  return Buffer.concat(pieces);
}

describe("a push's body on its way in", () => {
  it("reads a gzipped push's commands and commits, and spools and hashes the body exactly as it came", async () => {
    const sandbox = gitSandbox();
    const repo = await sandbox.repository("intake");
    const old = await sandbox.git(["rev-parse", "HEAD"], { cwd: repo });
    const next = await sandbox.commit(repo, "next", { "next.txt": "next\n" });
    const pack = await sandbox.bytes(["pack-objects", "--stdout", "--revs", "-q"], { cwd: repo, input: `${next}\n^${old}\n` });
    const body = Buffer.concat([pktLine(`${old} ${next} refs/heads/main\0report-status side-band-64k\n`), FLUSH, pack]);
    const gzipped = zlib.gzipSync(body);

    const spool = await Spool.create(mkdtempSync(path.join(os.tmpdir(), "axon-spool-")));
    const intake = new PushIntake(request(gzipped, { "content-encoding": "gzip" }, 97), spool, 1024 * 1024);
    expect((await intake.commands).updates).toEqual([{ ref: "refs/heads/main", oldId: old, newId: next }]);
    expect((await intake.settled).map((update) => update.operation)).toEqual(["git.push.fast_forward"]);
    const done = await intake.done;
    expect(done).toEqual({ bytes: gzipped.length, sha256: createHash("sha256").update(gzipped).digest("hex") });
    expect((await spooled(spool)).equals(gzipped)).toBe(true);
    await spool.close();
  });

  it("refuses a body past its limit, and one that ends before its commands do", async () => {
    const spool = await Spool.create(mkdtempSync(path.join(os.tmpdir(), "axon-spool-")));
    const large = new PushIntake(request(Buffer.alloc(5000, 0x61), {}), spool, 4096);
    await expect(large.done).rejects.toMatchObject({ reason: "GIT_PUSH_TOO_LARGE" });
    await expect(large.commands).rejects.toMatchObject({ reason: "GIT_PUSH_TOO_LARGE" });
    const cut = new PushIntake(request(pktLine(`${"a".repeat(40)} ${"b".repeat(40)} refs/heads/main\n`), {}), await Spool.create(os.tmpdir()), 4096);
    await expect(cut.done).rejects.toMatchObject({ reason: "GIT_PUSH_MALFORMED" });
  });
});
