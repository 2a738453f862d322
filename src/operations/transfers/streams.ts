import { createHash } from "node:crypto";
import { invalidArgument, notFound } from "../../errors.js";
import type { PrismaClient } from "../../store/database.js";
import type { Clock } from "../clock.js";
import { newId } from "../lifecycle.js";
import { capacityRefusal } from "./capacity.js";
import type { CapacityLock, TransferTransaction } from "./capacity-lock.js";
import { payloadTooLarge } from "./sealed-payloads.js";

/** Spec §6: large content is kept as a table of chunks of this size. */
export const CHUNK_BYTES = 256 * 1024;
const streamIdPattern = /^stream_[A-Za-z0-9_-]{24}$/;

export interface StreamLimits {
  ttlSeconds: number;
  uploadTimeoutSeconds: number;
  maxBytes: number;
  maxPerClient: number;
  maxClientBytes: number;
  maxTotalBytes: number;
}

export interface StreamReceipt {
  id: string;
  transferId: string;
  size: number;
  /** Hex SHA-256 of the content. */
  sha256: string;
}

/** A stored stream ready to be read chunk by chunk, and deleted once it was read to the end. */
export interface StreamDownload extends StreamReceipt {
  chunks(): AsyncIterable<Uint8Array>;
  /** Call once the whole content went out: the stream is gone for good. */
  downloaded(): Promise<void>;
}

export interface TransferStreamsOptions {
  prisma: PrismaClient;
  lock: CapacityLock;
  limits: StreamLimits;
  clock: Clock;
  /** Rows of content; 256 KiB unless a test says otherwise. */
  chunkBytes?: number;
}

/**
 * Streams (Agent V1 §6): a bounded binary upload stored in the database (so any replica serves it) as it arrives,
 * downloaded once by its owner. An upload that does not arrive whole leaves no complete stream behind.
 */
export class TransferStreams {
  private readonly chunkBytes: number;

  constructor(private readonly options: TransferStreamsOptions) {
    this.chunkBytes = options.chunkBytes ?? CHUNK_BYTES;
  }

  /**
   * Reserves `declaredSize` bytes against the caps, then stores `body` chunk by chunk, hashing as it goes. The body
   * must be exactly `declaredSize` bytes; whatever goes wrong, the partial rows are removed.
   */
  async upload(clientId: string, declaredSize: number, body: AsyncIterable<Uint8Array>): Promise<StreamReceipt> {
    const { prisma, lock, limits, clock } = this.options;
    if (!Number.isSafeInteger(declaredSize) || declaredSize < 1) {
      throw invalidArgument("EMPTY_STREAM", "a stream holds at least one byte", [{ field: "Content-Length", description: `1 to ${limits.maxBytes}` }]);
    }
    if (declaredSize > limits.maxBytes) throw payloadTooLarge(limits.maxBytes);

    const id = newId("stream");
    const transferId = newId("xfer");
    await lock(async (tx) => {
      const now = clock.now();
      await this.admit(tx, clientId, declaredSize, now);
      // Incomplete until the last byte is stored; if this process dies first, the sweeper removes it at expiresAt.
      await tx.transferStream.create({
        data: { id, clientId, transferId, size: declaredSize, sha256: "", createdAt: now, expiresAt: new Date(now.getTime() + limits.uploadTimeoutSeconds * 1000), complete: false },
      });
    });

    try {
      const sha256 = await this.storeChunks(id, declaredSize, body);
      const now = clock.now();
      const completed = await prisma.transferStream.updateMany({
        where: { id, complete: false },
        data: { complete: true, sha256, expiresAt: new Date(now.getTime() + limits.ttlSeconds * 1000) },
      });
      if (completed.count !== 1) throw new Error("the upload outlived its deadline and was swept");
      return { id, transferId, size: declaredSize, sha256 };
    } catch (error) {
      await prisma.transferStream.deleteMany({ where: { id } }).catch(() => undefined);
      throw error;
    }
  }

  private async storeChunks(streamId: string, declaredSize: number, body: AsyncIterable<Uint8Array>): Promise<string> {
    const { prisma } = this.options;
    const hash = createHash("sha256");
    const nextBuffer = (stored: number) => new Uint8Array(Math.min(this.chunkBytes, declaredSize - stored));
    let buffer = nextBuffer(0);
    let filled = 0;
    let stored = 0;
    let index = 0;
    const flush = async () => {
      await prisma.transferChunk.create({ data: { streamId, index, data: buffer.subarray(0, filled) } });
      index++;
      stored += filled;
      filled = 0;
      buffer = nextBuffer(stored);
    };
    let received = 0;
    for await (const piece of body) {
      received += piece.byteLength;
      // Checked before copying, so every piece fits in what is left of the declared size.
      if (received > declaredSize) throw sizeMismatch(declaredSize);
      hash.update(piece);
      for (let offset = 0; offset < piece.byteLength; ) {
        const taken = Math.min(buffer.byteLength - filled, piece.byteLength - offset);
        buffer.set(piece.subarray(offset, offset + taken), filled);
        filled += taken;
        offset += taken;
        if (filled === buffer.byteLength) await flush();
      }
    }
    if (received !== declaredSize) throw sizeMismatch(declaredSize);
    return hash.digest("hex");
  }

  /** The client's complete stream `id`; another client's is as absent as one that never existed. */
  async open(clientId: string, id: string): Promise<StreamDownload> {
    const { prisma, clock } = this.options;
    const row = streamIdPattern.test(id)
      ? await prisma.transferStream.findFirst({ where: { id, clientId, complete: true, expiresAt: { gt: clock.now() } } })
      : null;
    if (!row) throw notFound("STREAM_NOT_FOUND", "stream not found", { stream_id: id.slice(0, 64) });
    const count = Math.ceil(row.size / this.chunkBytes);
    return {
      id: row.id,
      transferId: row.transferId,
      size: row.size,
      sha256: row.sha256,
      async *chunks() {
        // One row at a time: a download never holds more than a chunk in memory.
        for (let index = 0; index < count; index++) {
          const chunk = await prisma.transferChunk.findUnique({ where: { streamId_index: { streamId: row.id, index } } });
          if (!chunk) throw new Error("the stream was removed during the download");
          yield chunk.data;
        }
      },
      downloaded: async () => {
        await prisma.transferStream.deleteMany({ where: { id: row.id } });
      },
    };
  }

  /** Removes expired streams, complete or abandoned mid-upload (their chunks go with them). */
  async sweep(): Promise<number> {
    const { count } = await this.options.prisma.transferStream.deleteMany({ where: { expiresAt: { lte: this.options.clock.now() } } });
    return count;
  }

  private async admit(tx: TransferTransaction, clientId: string, size: number, now: Date): Promise<void> {
    const { limits } = this.options;
    // Uploads in progress count too: their bytes are on their way.
    const live = { expiresAt: { gt: now } };
    const clientCount = await tx.transferStream.count({ where: { ...live, clientId } });
    if (clientCount + 1 > limits.maxPerClient) {
      throw capacityRefusal("CLIENT_STREAM_LIMIT", "too many stored streams", clientId, limits.maxPerClient, `at most ${limits.maxPerClient} stored streams per client`);
    }
    const clientBytes = (await tx.transferStream.aggregate({ where: { ...live, clientId }, _sum: { size: true } }))._sum.size ?? 0;
    if (Number(clientBytes) + size > limits.maxClientBytes) {
      throw capacityRefusal("CLIENT_STREAM_BYTES_LIMIT", "the stored streams of this client are too large", clientId, limits.maxClientBytes, `at most ${limits.maxClientBytes} bytes of stored streams per client`);
    }
    const totalBytes = (await tx.transferStream.aggregate({ where: live, _sum: { size: true } }))._sum.size ?? 0;
    if (Number(totalBytes) + size > limits.maxTotalBytes) {
      throw capacityRefusal("GLOBAL_STREAM_BYTES_LIMIT", "the server holds too many stream bytes", undefined, limits.maxTotalBytes, `at most ${limits.maxTotalBytes} bytes of stored streams on the server`);
    }
  }
}

function sizeMismatch(declaredSize: number) {
  return invalidArgument("BODY_SIZE_MISMATCH", "the body is not as long as its Content-Length", [{ field: "body", description: `exactly ${declaredSize} bytes` }]);
}
