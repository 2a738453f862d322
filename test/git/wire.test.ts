import { describe, expect, it } from "vitest";
import { advertisedRefs } from "../../src/git/advertised-refs.js";
import { LfsCapabilities } from "../../src/git/lfs-capabilities.js";
import { FLUSH, pktLine, PktLineReader, sidebandLines } from "../../src/git/pkt-line.js";
import { isValidRefName, PushCommandsError, PushCommandsReader } from "../../src/git/push-commands.js";
import { answerFormat, PushReportReader, rejectionReport } from "../../src/git/report-status.js";

const a = "a".repeat(40);
const b = "b".repeat(40);
const zero = "0".repeat(40);

/** Feeds `bytes` one at a time: every boundary a socket could cut at. */
function readCommands(bytes: Buffer) {
  const reader = new PushCommandsReader();
  for (let at = 0; at < bytes.length; at++) {
    const read = reader.push(bytes.subarray(at, at + 1));
    if (read) return read;
  }
  return undefined;
}

describe("Git's wire formats as Axon reads and writes them", () => {
  it("reads a push's commands, capabilities and options, and hands back the pack that follows", () => {
    const body = Buffer.concat([
      pktLine(`${a} ${b} refs/heads/main\0report-status side-band-64k atomic push-options agent=git/2.39\n`),
      pktLine(`${zero} ${b} refs/heads/new\n`),
      pktLine(`shallow ${a}\n`),
      FLUSH,
      pktLine("ci.skip\n"),
      FLUSH,
      Buffer.from("PACK...."),
    ]);
    const read = readCommands(body)!;
    expect(read.commands).toEqual({
      updates: [
        { ref: "refs/heads/main", oldId: a, newId: b },
        { ref: "refs/heads/new", oldId: zero, newId: b },
      ],
      capabilities: ["report-status", "side-band-64k", "atomic", "push-options", "agent=git/2.39"],
      pushOptions: ["ci.skip"],
      idLength: 40,
    });
    expect(read.rest.length).toBe(0); // fed a byte at a time: the pack comes in later pieces
    expect(new PushCommandsReader().push(body)?.rest.toString()).toBe("PACK....");
  });

  it("reads Git's probe, a bare flush, as a push of nothing", () => {
    expect(new PushCommandsReader().push(FLUSH)?.commands.updates).toEqual([]);
  });

  it.each([
    ["a command that is not three fields", pktLine(`${a} refs/heads/main\n`)],
    ["an id that is not hex", pktLine(`${"g".repeat(40)} ${b} refs/heads/main\n`)],
    ["a ref outside refs/", pktLine(`${a} ${b} HEAD\n`)],
    ["a ref with a space", pktLine(`${a} ${b} refs/heads/a b\n`)],
    ["a ref named twice", Buffer.concat([pktLine(`${a} ${b} refs/heads/x\n`), pktLine(`${b} ${a} refs/heads/x\n`)])],
    ["a signed push", pktLine("push-cert\0report-status\n")],
    ["a length that is not hex", Buffer.from("zzzz")],
  ])("refuses %s", (_case, bytes) => {
    expect(() => new PushCommandsReader().push(Buffer.concat([bytes, FLUSH]))).toThrow();
  });

  it("names refs as git-check-ref-format allows them", () => {
    for (const ref of ["refs/heads/main", "refs/heads/agent/x-1", "refs/tags/v1.0"]) expect(isValidRefName(ref)).toBe(true);
    for (const ref of ["refs/heads/a..b", "refs/heads/.hidden", "refs/heads/x.lock", "refs/heads/", "refs/heads/a@{1}", "refs/heads/a\u0007"]) expect(isValidRefName(ref)).toBe(false);
    expect(() => new PushCommandsReader().push(Buffer.concat([pktLine(`${a} ${b} refs/heads/a..b\n`), FLUSH]))).toThrow(PushCommandsError);
  });

  it("rejects every ref of a push in report-status, inside the sideband when the client asked for it", () => {
    const report = rejectionReport(answerFormat(["report-status", "side-band-64k"]), [{ ref: "refs/heads/main", reason: "axon: refused\nby rule" }]);
    const outer = new PktLineReader();
    outer.push(report);
    const band = outer.next();
    expect(band).toMatchObject({ kind: "data" });
    expect((band as { payload: Buffer }).payload[0]).toBe(1);
    const inner = (band as { payload: Buffer }).payload.subarray(1).toString();
    expect(inner).toBe(`${pktLine("unpack ok\n").toString()}${pktLine("ng refs/heads/main axon: refused by rule\n").toString()}0000`);
    expect(outer.next()).toEqual({ kind: "flush" });
    const plain = rejectionReport(answerFormat(["report-status"]), [{ ref: "refs/heads/x", reason: "no" }]).toString();
    expect(plain).toBe(`${pktLine("unpack ok\n").toString()}${pktLine("ng refs/heads/x no\n").toString()}0000`);
  });

  it("reads the host's report out of its sideband, whatever the pieces it arrives in", () => {
    const report = Buffer.concat([pktLine("unpack ok\n"), pktLine("ok refs/heads/main\n"), pktLine("option forced-update\n"), pktLine("ng refs/heads/x hook declined\n"), FLUSH]);
    const answer = Buffer.concat([sidebandLines(2, "Resolving deltas\n"), sidebandLines(1, report.subarray(0, 7)), sidebandLines(1, report.subarray(7)), FLUSH]);
    const reader = new PushReportReader(true);
    for (let at = 0; at < answer.length; at += 3) reader.push(answer.subarray(at, at + 3));
    expect(reader.result()).toEqual({
      complete: true,
      unpackOk: true,
      refs: [
        { ref: "refs/heads/main", ok: true },
        { ref: "refs/heads/x", ok: false, reason: "hook declined" },
      ],
    });
    const cut = new PushReportReader(false);
    cut.push(report.subarray(0, 20));
    expect(cut.result().complete).toBe(false);
  });

  it("reads the refs of a receive-pack advertisement, an empty repository's too", () => {
    const advertisement = Buffer.concat([pktLine("# service=git-receive-pack\n"), FLUSH, pktLine(`${a} refs/heads/main\0report-status\n`), pktLine(`${b} refs/tags/v1\n`), pktLine(`${a} refs/tags/v1^{}\n`), FLUSH]);
    expect(advertisedRefs(advertisement)).toEqual(new Map([["refs/heads/main", a], ["refs/tags/v1", b]]));
    const empty = Buffer.concat([pktLine("# service=git-receive-pack\n"), FLUSH, pktLine(`${zero} capabilities^{}\0report-status\n`), FLUSH]);
    expect(advertisedRefs(empty)).toEqual(new Map());
    expect(() => advertisedRefs(Buffer.concat([pktLine("# service=git-receive-pack\n"), FLUSH]))).toThrow();
  });

  it("issues LFS capabilities bound to their client, host and repository, expiring with the host's URL or within the hour", () => {
    let now = 0;
    const capabilities = new LfsCapabilities({ now: () => new Date(now) });
    const base = { clientId: "alice", host: "h", repository: "o/r.git", oid: "c".repeat(64), size: 1, method: "GET" as const, href: "https://storage/x?sig=1", headers: {} };
    const short = capabilities.issue(base, { inSeconds: 60 })!;
    const long = capabilities.issue(base, { at: new Date(10 * 3600_000).toISOString() })!;
    expect(short.expiresInSeconds).toBe(60);
    expect(long.expiresInSeconds).toBe(3600);
    expect(short.id).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(capabilities.find(short.id, "alice", "h", "o/r.git")?.href).toBe(base.href);
    expect(capabilities.find(short.id, undefined, "h", "o/r.git")).toBeDefined();
    expect(capabilities.find(short.id, "bob", "h", "o/r.git")).toBeUndefined();
    expect(capabilities.find(short.id, "alice", "h", "o/other.git")).toBeUndefined();
    now = 61_000;
    expect(capabilities.find(short.id, "alice", "h", "o/r.git")).toBeUndefined();
    expect(capabilities.find(long.id, "alice", "h", "o/r.git")).toBeDefined();
    now = 3601_000;
    expect(capabilities.find(long.id, "alice", "h", "o/r.git")).toBeUndefined();
  });
});
