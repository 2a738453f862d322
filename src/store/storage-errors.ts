/**
 * Which thrown errors come from the database, and which of those mean it cannot be reached right now (down,
 * restarting, refusing or dropping connections) so that the same request may succeed in a moment.
 *
 * What a PostgreSQL restart actually produces through Prisma 7 + PrismaPg + pg (seen with a private cluster stopped
 * and killed under queries): PrismaClientKnownRequestError P1001 (meta.driverAdapterError.cause.kind
 * "DatabaseNotReachable", ECONNREFUSED), P2039 / P2010 wrapping SQLSTATE 57P01 for queries cut by the shutdown, and
 * pg's own Errors passed through unwrapped, known only by their message ("Connection terminated unexpectedly" when a
 * backend dies, "Client has encountered a connection error ..." for a pooled client the shutdown cut, the pool's connect
 * timeouts). SQLite's busy timeout arrives as kind SocketTimeout: also worth a retry.
 */

/** Driver adapter error kinds (PrismaPg, better-sqlite3) that mean the connection, not the query, failed. */
const unreachableKinds = new Set(["DatabaseNotReachable", "ConnectionClosed", "SocketTimeout", "TooManyConnections"]);
/** Prisma's connection-level codes: can't reach, connect timeout, operation timeout, connection closed, pool timeout. */
const unreachablePrismaCodes = new Set(["P1001", "P1002", "P1008", "P1017", "P2024"]);
/** Node's socket errors on a connection to the database. */
const socketCodes = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "ENOTFOUND", "EHOSTUNREACH", "ENETUNREACH", "EPIPE"]);
/** pg raises these as plain Errors without a code. */
const pgConnectionMessages = [
  "Connection terminated",
  "timeout exceeded when trying to connect",
  // A connection's own connect timeout (`connectionTimeoutMillis` on the client).
  "timeout expired",
  "Client has encountered a connection error and is not queryable",
  "Client was closed and is not queryable",
];

/**
 * What a replica still waiting for its database throws where it would use it: answered as any unreachable database
 * is (STORAGE_UNAVAILABLE, retry shortly), so a replica started during an outage behaves as one that lived through it.
 */
export class DatabaseNotOpen extends Error {
  override readonly name = "DatabaseNotOpen";
  constructor() {
    super("the database has not opened yet");
  }
}

/** True when the database could not be reached or dropped the connection: worth retrying shortly, not a bug. */
export function isStorageUnavailable(error: unknown): boolean {
  return someInChain(error, (candidate) => {
    if (candidate instanceof DatabaseNotOpen) return true;
    const code = stringField(candidate, "code");
    // PrismaClientInitializationError names its code errorCode.
    const prismaCode = code ?? stringField(candidate, "errorCode");
    if (prismaCode !== undefined && unreachablePrismaCodes.has(prismaCode)) return true;
    if (code !== undefined && socketCodes.has(code)) return true;
    if (code !== undefined && isSqlState(candidate) && isUnavailableSqlState(code)) return true;
    const adapterCause = driverAdapterCause(candidate);
    if (adapterCause !== undefined) {
      const kind = stringField(adapterCause, "kind");
      if (kind !== undefined && unreachableKinds.has(kind)) return true;
      const sqlState = stringField(adapterCause, "originalCode") ?? stringField(adapterCause, "code");
      if (kind === "postgres" && sqlState !== undefined && isUnavailableSqlState(sqlState)) return true;
    }
    const message = stringField(candidate, "message") ?? "";
    return code === undefined && pgConnectionMessages.some((known) => message.startsWith(known));
  });
}

/** True when the error is recognisably the database's (any Prisma or driver error): a storage failure, not ours. */
export function isStorageError(error: unknown): boolean {
  return (
    isStorageUnavailable(error) ||
    someInChain(error, (candidate) => {
      const name = stringField(candidate, "name") ?? "";
      return name.startsWith("PrismaClient") || name === "DriverAdapterError" || isSqlState(candidate);
    })
  );
}

/** True when the database refused a write for a unique key already taken (P2002, or a raw query's adapter error). */
export function isUniqueViolation(error: unknown): boolean {
  return someInChain(error, (candidate) => {
    if (stringField(candidate, "code") === "P2002") return true;
    const adapterCause = driverAdapterCause(candidate);
    return adapterCause !== undefined && stringField(adapterCause, "kind") === "UniqueConstraintViolation";
  });
}

/** Class 08 (connection exception), 57P01-57P03 (admin / crash shutdown, cannot connect now), 53300 (too many connections). */
function isUnavailableSqlState(code: string): boolean {
  return code.startsWith("08") || code === "57P01" || code === "57P02" || code === "57P03" || code === "53300";
}

/** A pg DatabaseError: a five-character SQLSTATE with the server's severity. */
function isSqlState(candidate: object): boolean {
  return typeof stringField(candidate, "severity") === "string" && /^[0-9A-Z]{5}$/.test(stringField(candidate, "code") ?? "");
}

/** Prisma keeps the adapter's error in meta.driverAdapterError; a DriverAdapterError thrown as such carries it as cause. */
function driverAdapterCause(candidate: object): object | undefined {
  const adapterError = stringField(candidate, "name") === "DriverAdapterError" ? candidate : field(field(candidate, "meta"), "driverAdapterError");
  const cause = field(adapterError, "cause");
  return typeof cause === "object" && cause !== null ? cause : undefined;
}

function someInChain(error: unknown, test: (candidate: object) => boolean): boolean {
  // A few levels are enough: pg wraps its connect timeout once; guard against cycles all the same.
  for (let candidate = error, depth = 0; typeof candidate === "object" && candidate !== null && depth < 5; depth++) {
    if (test(candidate)) return true;
    candidate = field(candidate, "cause");
  }
  return false;
}

function field(value: unknown, name: string): unknown {
  return typeof value === "object" && value !== null ? (value as Record<string, unknown>)[name] : undefined;
}

function stringField(value: unknown, name: string): string | undefined {
  const found = field(value, name);
  return typeof found === "string" ? found : undefined;
}
