import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AxonError } from "../../../src/errors.js";
import { createLogger } from "../../../src/logger.js";
import { createTransfers, type Transfers } from "../../../src/operations/transfers/transfers.js";
import { transferSettingsFromEnv } from "../../../src/operations/transfers/settings.js";
import { TransferStreams } from "../../../src/operations/transfers/streams.js";
import { capacityLock } from "../../../src/operations/transfers/capacity-lock.js";
import { openDatabase, type Database } from "../../../src/store/database.js";

/** A clock the tests move by hand. */
const clock = { at: new Date("2030-01-01T00:00:00Z"), now() { return new Date(this.at); } };

async function* pieces(...parts: Uint8Array[]): AsyncIterable<Uint8Array> {
  for (const part of parts) yield part;
}

describe("sealed payloads and streams in the database", () => {
  let database: Database;
  let transfers: Transfers;
  let streams: TransferStreams;

  beforeAll(async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "axon-transfers-"));
    database = await openDatabase(`file:${path.join(dir, "axon.db")}`);
    transfers = await createTransfers({
      database,
      settings: transferSettingsFromEnv({ AXON_SEALED_TTL_SECONDS: "60", AXON_STREAM_TTL_SECONDS: "60", AXON_STREAM_UPLOAD_TIMEOUT_SECONDS: "30" }),
      dataDir: dir,
      logger: createLogger("silent"),
      clock,
      sweepMs: 0,
    });
    // Tiny chunks, so chunk boundaries are easy to reach.
    streams = new TransferStreams({
      prisma: database.prisma,
      lock: capacityLock(database.prisma, database.provider),
      clock,
      chunkBytes: 4,
      limits: { ttlSeconds: 60, uploadTimeoutSeconds: 30, maxBytes: 100, maxPerClient: 10, maxClientBytes: 1000, maxTotalBytes: 1000 },
    });
  });
  afterAll(async () => {
    transfers.close();
    await database.close();
  });

  it("a sealed payload opens once for its owner, and expires with the clock", async () => {
    const { receipt } = await transfers.sealedPayloads.create("alice", "k1", Buffer.from("hello"));
    expect(receipt.expiresAt.getTime() - clock.now().getTime()).toBe(60_000);
    await expect(transfers.sealedPayloads.consume("bob", receipt.id)).rejects.toMatchObject({ reason: "SEALED_PAYLOAD_NOT_FOUND" });
    expect((await transfers.sealedPayloads.consume("alice", receipt.id)).toString()).toBe("hello");
    await expect(transfers.sealedPayloads.consume("alice", receipt.id)).rejects.toMatchObject({ reason: "SEALED_PAYLOAD_CONSUMED" });

    const later = await transfers.sealedPayloads.create("alice", "k2", Buffer.from("later"));
    clock.at = new Date(clock.at.getTime() + 60_000);
    await expect(transfers.sealedPayloads.consume("alice", later.receipt.id)).rejects.toMatchObject({ reason: "SEALED_PAYLOAD_EXPIRED" });
    expect(await transfers.sealedPayloads.sweep()).toBe(2);
  });

  it("concurrent consumers: exactly one gets the content", async () => {
    const { receipt } = await transfers.sealedPayloads.create("alice", "race", Buffer.from("once"));
    const outcomes = await Promise.allSettled(Array.from({ length: 8 }, () => transfers.sealedPayloads.consume("alice", receipt.id)));
    expect(outcomes.filter((outcome) => outcome.status === "fulfilled")).toHaveLength(1);
    for (const outcome of outcomes) if (outcome.status === "rejected") expect(outcome.reason).toBeInstanceOf(AxonError);
  });

  it("a stream is stored in chunks of the chunk size whatever the pieces it arrives in, and read back whole", async () => {
    const content = randomBytes(11);
    const receipt = await streams.upload("alice", 11, pieces(content.subarray(0, 1), content.subarray(1, 9), content.subarray(9)));
    expect(receipt.sha256).toBe(createHash("sha256").update(content).digest("hex"));
    const rows = await database.prisma.transferChunk.findMany({ where: { streamId: receipt.id }, orderBy: { index: "asc" } });
    expect(rows.map((row) => row.data.byteLength)).toEqual([4, 4, 3]);
    const download = await streams.open("alice", receipt.id);
    const read: Uint8Array[] = [];
    for await (const chunk of download.chunks()) read.push(chunk);
    expect(Buffer.concat(read).equals(content)).toBe(true);
    await download.downloaded();
    await expect(streams.open("alice", receipt.id)).rejects.toMatchObject({ reason: "STREAM_NOT_FOUND" });
  });

  it("a body shorter or longer than declared, or one that breaks off, leaves no rows", async () => {
    const before = await database.prisma.transferStream.count();
    await expect(streams.upload("alice", 10, pieces(new Uint8Array(9)))).rejects.toMatchObject({ reason: "BODY_SIZE_MISMATCH" });
    await expect(streams.upload("alice", 10, pieces(new Uint8Array(8), new Uint8Array(8)))).rejects.toMatchObject({ reason: "BODY_SIZE_MISMATCH" });
    async function* breaking() {
      yield new Uint8Array(8);
      throw new Error("connection reset");
    }
    await expect(streams.upload("alice", 10, breaking())).rejects.toThrow("connection reset");
    expect(await database.prisma.transferStream.count()).toBe(before);
    expect(await database.prisma.transferChunk.count({ where: { stream: { complete: false } } })).toBe(0);
  });

  it("an upload abandoned by a crashed process is swept at its deadline; a complete stream at its TTL", async () => {
    await database.prisma.transferStream.create({
      data: { id: "stream_abandonedabandonedaband", clientId: "alice", transferId: "xfer_x", size: 10, sha256: "", expiresAt: new Date(clock.at.getTime() + 30_000) },
    });
    const complete = await streams.upload("alice", 3, pieces(new Uint8Array(3)));
    clock.at = new Date(clock.at.getTime() + 30_000);
    expect(await streams.sweep()).toBe(1);
    await streams.open("alice", complete.id);
    clock.at = new Date(clock.at.getTime() + 30_000);
    await expect(streams.open("alice", complete.id)).rejects.toMatchObject({ reason: "STREAM_NOT_FOUND" });
    expect(await streams.sweep()).toBe(1);
  });

  it("refuses an empty stream and one over the size cap before reading anything", async () => {
    await expect(streams.upload("alice", 0, pieces())).rejects.toMatchObject({ reason: "EMPTY_STREAM" });
    await expect(streams.upload("alice", 101, pieces())).rejects.toMatchObject({ reason: "PAYLOAD_TOO_LARGE" });
  });
});
