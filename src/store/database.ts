import path from "node:path";
import type { SqlMigrationAwareDriverAdapterFactory } from "@prisma/driver-adapter-utils";
import type { PrismaClient as SqlitePrismaClient } from "../gen/prisma/sqlite/client.js";
import type { Logger } from "../logger.js";
import { applyMigrations } from "./migrate.js";
import { migrationsDirectory, type Provider } from "./schema-files.js";
import type { DirectStatements } from "./sqlite/adapter.js";

/**
 * The client the store programs against. Both generated clients share one model API; the SQLite one is the common
 * denominator (PostgreSQL only adds options such as case-insensitive filters), so it is the type for both.
 */
export type PrismaClient = SqlitePrismaClient;
export { Prisma } from "../gen/prisma/sqlite/client.js";
export type {
  AuditRecord,
  ClientLoad,
  Event,
  GlobalLoad,
  Grant,
  Operation,
  Principal,
  SealedPayload,
  TemporaryNetwork,
  TransferChunk,
  TransferStream,
} from "../gen/prisma/sqlite/client.js";
export type { Provider };

export interface Database {
  prisma: PrismaClient;
  /**
   * For background work that must not queue behind requests (the execution worker's claims, outcomes and lease
   * heartbeats): on PostgreSQL a client with a small pool of its own; on SQLite `prisma` itself.
   */
  background: PrismaClient;
  provider: Provider;
  /** SQLite: statements to the database thread past Prisma, for hot paths (on the connection `prisma` uses). */
  direct?: DirectStatements;
  /** The migrations this open applied (empty when the database was current). */
  appliedMigrations: string[];
  close(): Promise<void>;
}

export interface OpenDatabaseOptions {
  logger?: Pick<Logger, "info"> & Partial<Pick<Logger, "error">>;
  /** Opens the pools' connections before resolving (the default), or while the caller already serves. */
  warmUpFirst?: boolean;
}

/** `DATABASE_URL`'s default: the SQLite file under the data directory. */
export function defaultDatabaseUrl(dataDir: string): string {
  return `file:${path.join(dataDir, "axon.db")}`;
}

/**
 * Opens the database a URL names (`file:` SQLite, the default; `postgres://` or `postgresql://` PostgreSQL), applies the
 * committed migrations it lacks, and returns a client for it.
 */
export async function openDatabase(databaseUrl: string, options: OpenDatabaseOptions = {}): Promise<Database> {
  const provider = providerOf(databaseUrl);
  const { logger } = options;
  // Each provider's driver, adapter and generated client load only when used: pg is not a SQLite start's cost.
  const target =
    provider === "sqlite"
      ? (await import("./sqlite-database.js")).sqliteTarget(databaseUrl, logger)
      : (await import("./postgres-database.js")).postgresTarget(databaseUrl, redact(databaseUrl));

  const appliedMigrations = await target.migrate(() => applyMigrations(target.migrationAdapter(), migrationsDirectory(provider)));
  logger?.info(
    { database: target.description, provider, migrations_applied: appliedMigrations.length, migrations: appliedMigrations },
    appliedMigrations.length > 0 ? `applied ${appliedMigrations.length} migration(s) to ${target.description}` : `database ${target.description} is current`,
  );

  const prisma = target.client();
  await prisma.$connect();
  const background = target.backgroundClient?.() ?? prisma;
  await background.$connect();
  const warming = target.warmUp?.();
  if (options.warmUpFirst ?? true) await warming;
  return {
    prisma,
    background,
    provider,
    direct: target.direct,
    appliedMigrations,
    close: async () => {
      await prisma.$disconnect();
      if (background !== prisma) await background.$disconnect();
    },
  };
}

/** Which database a URL names; throws, saying what is accepted, for anything else. */
export function providerOf(databaseUrl: string): Provider {
  if (databaseUrl.startsWith("file:")) return "sqlite";
  if (/^postgres(ql)?:\/\//.test(databaseUrl)) return "postgresql";
  throw new Error(`DATABASE_URL must start with file:, postgres:// or postgresql:// (got ${redact(databaseUrl).split(":")[0]}:...)`);
}

export interface DatabaseTarget {
  /** What logs may say about the database: never a password. */
  description: string;
  /** Runs the migration step, excluding other processes doing the same. */
  migrate(apply: () => Promise<string[]>): Promise<string[]>;
  migrationAdapter(): SqlMigrationAwareDriverAdapterFactory;
  /** The request path's client. */
  client(): PrismaClient;
  /** A client on a separate pool for `Database.background`, where the database has pools. */
  backgroundClient?(): PrismaClient;
  /** Opens the pools' connections before the first request needs them. */
  warmUp?(): Promise<void>;
  direct?: DirectStatements;
}

/** The URL with its password replaced, fit for logs and errors. */
export function redact(databaseUrl: string): string {
  try {
    const url = new URL(databaseUrl);
    if (url.password) url.password = "***";
    return url.toString();
  } catch {
    return databaseUrl.replace(/\/\/([^:/@]*):[^@]*@/, "//$1:***@");
  }
}
