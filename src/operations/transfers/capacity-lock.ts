import type { Prisma, PrismaClient, Provider } from "../../store/database.js";

export type TransferTransaction = Omit<Prisma.TransactionClient, never>;
export type CapacityLock = <T>(work: (tx: TransferTransaction) => Promise<T>) => Promise<T>;

// Any constant will do, so long as every replica takes the same one (and it is not the admission lock's).
const transferLockKey = 7_426_160_302;

/**
 * A transaction in which counting what is stored and adding to it cannot interleave, so caps hold on one process
 * and across replicas sharing PostgreSQL (SQLite serializes writers by itself).
 */
export function capacityLock(prisma: PrismaClient, provider: Provider, lockKey = transferLockKey): CapacityLock {
  return (work) =>
    prisma.$transaction(
      async (tx) => {
        if (provider === "postgresql") await tx.$executeRawUnsafe(`SELECT pg_advisory_xact_lock(${lockKey})`);
        return work(tx);
      },
      { maxWait: 10_000, timeout: 20_000 },
    );
}
