import { Prisma, type Database, type Event, type Grant, type Operation, type PrismaClient, type Provider } from "../store/database.js";
import type { DirectStatements } from "../store/sqlite/adapter.js";

export type OperationRow = Operation;
export type GrantRow = Grant;
export type EventRow = Event;

/** What the lifecycle reads and writes inside one transaction. */
export type StoreTransaction = Omit<Prisma.TransactionClient, never>;

/**
 * The database as the operations lifecycle uses it: the generated client, which provider it speaks (the few
 * hand-written statements differ), and `transaction`. No transaction takes a lock beyond the rows it changes:
 * admission limits are counted in the load rows (`ClientLoad`, `GlobalLoad`), locked for one statement at most.
 */
export type StoreClient = PrismaClient & {
  provider: Provider;
  /** SQLite only: statements past Prisma's query interpreter, for the hot paths (`writeSubmission`, `recordOutcome`). */
  direct?: DirectStatements;
  transaction<T>(work: (tx: StoreTransaction) => Promise<T>): Promise<T>;
};

/** The store over one of the database's clients: `prisma` (requests, the default) or `background`. */
export function operationsStore(database: Pick<Database, "prisma" | "provider" | "direct">, prisma: PrismaClient = database.prisma): StoreClient {
  const transaction = <T>(work: (tx: StoreTransaction) => Promise<T>): Promise<T> => prisma.$transaction(work, { maxWait: 10_000, timeout: 20_000 });
  return Object.assign(Object.create(prisma) as PrismaClient, { provider: database.provider, direct: database.direct, transaction });
}

/** An SQLite store's statements past Prisma; every store `operationsStore` makes over an SQLite database has them. */
export function directStatements(store: StoreClient): DirectStatements {
  if (!store.direct) throw new Error("an SQLite store needs the database's direct statements (open it with openDatabase)");
  return store.direct;
}

/**
 * The rows a statement returns, sent past Prisma's query interpreter on SQLite (straight to the database thread): for
 * the statements every operation makes (reads of it, the worker's claim).
 */
export function queryRows<Row>(store: StoreClient, statement: Prisma.Sql): Promise<Row[]> {
  return store.provider === "sqlite" ? directStatements(store).query<Row>(statement) : store.$queryRaw<Row[]>`${statement}`;
}

/** The operation `where` picks: the read every submit (its replay) and every long poll make. */
export async function findOperation(store: StoreClient, where: Prisma.Sql): Promise<OperationRow | undefined> {
  const [row] = await queryRows<OperationRow>(store, Prisma.sql`SELECT * FROM "Operation" WHERE ${where}`);
  return row;
}
