import { createHash } from "node:crypto";
import { Code } from "@connectrpc/connect";
import { AxonError, invalidArgument, notFound } from "../../errors.js";
import type { PrismaClient } from "../../store/database.js";
import type { Clock } from "../clock.js";
import { newId } from "../lifecycle.js";
import type { CapacityLock, TransferTransaction } from "./capacity-lock.js";
import { UnsealError, type SealingKey } from "./sealing.js";
import { capacityRefusal } from "./capacity.js";

/** Spec §6: 1 B to 1 MiB. */
export const MAX_SEALED_BYTES = 1024 * 1024;
const idempotencyKeyPattern = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
export const sealedReferencePattern = /^sealed_[A-Za-z0-9_-]{24}$/;

export interface SealedPayloadLimits {
  ttlSeconds: number;
  maxPerClient: number;
  maxClientBytes: number;
  maxTotalBytes: number;
}

/** What a client is told of a sealed payload: never its content. */
export interface SealedPayloadReceipt {
  id: string;
  size: number;
  digest: string;
  expiresAt: Date;
}

export interface SealedPayloadsOptions {
  prisma: PrismaClient;
  lock: CapacityLock;
  key: SealingKey;
  limits: SealedPayloadLimits;
  clock: Clock;
}

/**
 * Sealed payloads (Agent V1 §6): bytes a client hands over once, kept encrypted, and given to one operation of that
 * client's, once, before they expire. Idempotent by the client's key: the same key and bytes give the same reference.
 */
export class SealedPayloads {
  constructor(private readonly options: SealedPayloadsOptions) {}

  /** Seals and stores `plaintext`, or returns the reference an earlier call with this key made. */
  async create(clientId: string, idempotencyKey: string, plaintext: Uint8Array): Promise<{ receipt: SealedPayloadReceipt; created: boolean }> {
    if (!idempotencyKeyPattern.test(idempotencyKey)) {
      throw invalidArgument("INVALID_IDEMPOTENCY_KEY", "the idempotency key is malformed", [
        { field: "Idempotency-Key", description: "1-128 characters of A-Z a-z 0-9 . _ : - starting with a letter or digit" },
      ]);
    }
    if (plaintext.byteLength === 0) throw invalidArgument("EMPTY_PAYLOAD", "a sealed payload holds at least one byte", [{ field: "body", description: "1 B to 1 MiB" }]);
    if (plaintext.byteLength > MAX_SEALED_BYTES) throw payloadTooLarge();

    const { prisma, lock, key, limits, clock } = this.options;
    const digest = createHash("sha256").update(plaintext).digest("hex");
    const existing = await prisma.sealedPayload.findUnique({ where: { clientId_idempotencyKey: { clientId, idempotencyKey } } });
    const replayed = replay(existing, digest, plaintext.byteLength, clock.now());
    if (replayed) return { receipt: replayed, created: false };

    const id = newId("sealed");
    const sealed = key.seal(plaintext, { id, clientId });
    return lock(async (tx) => {
      const now = clock.now();
      // A concurrent duplicate may have won while this one waited for the lock.
      const raced = await tx.sealedPayload.findUnique({ where: { clientId_idempotencyKey: { clientId, idempotencyKey } } });
      const again = replay(raced, digest, plaintext.byteLength, now);
      if (again) return { receipt: again, created: false };
      // An expired payload no longer holds its key.
      if (raced) await tx.sealedPayload.delete({ where: { id: raced.id } });

      await this.admit(tx, clientId, plaintext.byteLength, now);
      const row = await tx.sealedPayload.create({
        data: {
          id,
          clientId,
          idempotencyKey,
          digest,
          size: plaintext.byteLength,
          nonce: sealed.nonce,
          ciphertext: sealed.ciphertext,
          createdAt: now,
          expiresAt: new Date(now.getTime() + limits.ttlSeconds * 1000),
        },
      });
      return { receipt: receiptOf(row), created: true };
    });
  }

  /**
   * The plaintext of the client's payload `id`, marking it used: the only way it ever leaves the store. Another
   * client's payload is as absent as one that never existed; a used, expired or unreadable one is refused.
   */
  async consume(clientId: string, id: string): Promise<Buffer> {
    const { prisma, key, clock } = this.options;
    const row = sealedReferencePattern.test(id) ? await prisma.sealedPayload.findFirst({ where: { id, clientId } }) : null;
    if (!row) throw notFound("SEALED_PAYLOAD_NOT_FOUND", "sealed payload not found", { sealed_payload_id: id.slice(0, 64) });
    const now = clock.now();
    if (row.consumedAt !== null) throw consumed(id);
    if (row.expiresAt.getTime() <= now.getTime()) {
      throw new AxonError(Code.FailedPrecondition, "SEALED_PAYLOAD_EXPIRED", "the sealed payload has expired", { metadata: { sealed_payload_id: id } });
    }
    // Single use: whoever clears consumedAt first owns the content; the ciphertext goes with it.
    const claimed = await prisma.sealedPayload.updateMany({
      where: { id, clientId, consumedAt: null },
      data: { consumedAt: now, nonce: new Uint8Array(0), ciphertext: new Uint8Array(0) },
    });
    if (claimed.count !== 1) throw consumed(id);
    try {
      return key.open({ nonce: row.nonce, ciphertext: row.ciphertext }, { id, clientId });
    } catch (error) {
      if (!(error instanceof UnsealError)) throw error;
      throw new AxonError(Code.DataLoss, "SEALED_PAYLOAD_UNREADABLE", "the sealed payload could not be opened", { metadata: { sealed_payload_id: id } });
    }
  }

  /** Removes expired payloads (used ones too: they only kept their key and digest for replays). */
  async sweep(): Promise<number> {
    const { count } = await this.options.prisma.sealedPayload.deleteMany({ where: { expiresAt: { lte: this.options.clock.now() } } });
    return count;
  }

  private async admit(tx: TransferTransaction, clientId: string, size: number, now: Date): Promise<void> {
    const { limits } = this.options;
    const live = { consumedAt: null, expiresAt: { gt: now } };
    const clientCount = await tx.sealedPayload.count({ where: { ...live, clientId } });
    if (clientCount + 1 > limits.maxPerClient) {
      throw capacityRefusal("CLIENT_SEALED_PAYLOAD_LIMIT", "too many unused sealed payloads", clientId, limits.maxPerClient, `at most ${limits.maxPerClient} unused sealed payloads per client`);
    }
    const clientBytes = (await tx.sealedPayload.aggregate({ where: { ...live, clientId }, _sum: { size: true } }))._sum.size ?? 0;
    if (clientBytes + size > limits.maxClientBytes) {
      throw capacityRefusal("CLIENT_SEALED_BYTES_LIMIT", "the unused sealed payloads of this client are too large", clientId, limits.maxClientBytes, `at most ${limits.maxClientBytes} bytes of unused sealed payloads per client`);
    }
    const totalBytes = (await tx.sealedPayload.aggregate({ where: live, _sum: { size: true } }))._sum.size ?? 0;
    if (Number(totalBytes) + size > limits.maxTotalBytes) {
      throw capacityRefusal("GLOBAL_SEALED_BYTES_LIMIT", "the server holds too many sealed payload bytes", undefined, limits.maxTotalBytes, `at most ${limits.maxTotalBytes} bytes of unused sealed payloads on the server`);
    }
  }
}

type Row = { id: string; digest: string; size: number; expiresAt: Date };

/** The earlier answer for this key, if it still stands; a conflict if the bytes differ. */
function replay(existing: Row | null, digest: string, size: number, now: Date): SealedPayloadReceipt | undefined {
  if (!existing || existing.expiresAt.getTime() <= now.getTime()) return undefined;
  if (existing.digest === digest && existing.size === size) return receiptOf(existing);
  throw new AxonError(Code.Aborted, "IDEMPOTENCY_CONFLICT", "this idempotency key was used for other bytes", {
    metadata: { category: "conflict", sealed_payload_id: existing.id },
  });
}

function receiptOf(row: Row): SealedPayloadReceipt {
  return { id: row.id, size: row.size, digest: row.digest, expiresAt: row.expiresAt };
}

function consumed(id: string): AxonError {
  return new AxonError(Code.FailedPrecondition, "SEALED_PAYLOAD_CONSUMED", "the sealed payload was already used", { metadata: { sealed_payload_id: id } });
}

export function payloadTooLarge(limit = MAX_SEALED_BYTES): AxonError {
  return invalidArgument("PAYLOAD_TOO_LARGE", "the body is too large", [{ field: "body", description: `at most ${limit} bytes` }]);
}
