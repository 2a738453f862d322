import type { Event, Grant, Operation, Prisma, PrismaClient } from "../store/database.js";

export type OperationRow = Operation;
export type GrantRow = Grant;
export type EventRow = Event;

/** What the lifecycle reads and writes inside one transaction. */
export type StoreTransaction = Omit<Prisma.TransactionClient, never>;

/**
 * The database as the operations lifecycle uses it: the generated client, plus `serialized`, a transaction in
 * which decisions that count rows (admission limits, grant uses, idempotency) cannot interleave, on one
 * process or on several replicas sharing PostgreSQL.
 */
export type StoreClient = PrismaClient & {
  serialized<T>(work: (tx: StoreTransaction) => Promise<T>): Promise<T>;
};

// Any constant will do, so long as every replica takes the same one.
const admissionLockKey = 7_426_160_301;

export function operationsStore(prisma: PrismaClient, provider: "sqlite" | "postgresql"): StoreClient {
  const serialized = <T>(work: (tx: StoreTransaction) => Promise<T>): Promise<T> =>
    prisma.$transaction(
      async (tx) => {
        if (provider === "postgresql") await tx.$executeRawUnsafe(`SELECT pg_advisory_xact_lock(${admissionLockKey})`);
        return work(tx);
      },
      { maxWait: 10_000, timeout: 20_000 },
    );
  return Object.assign(prisma, { serialized });
}
