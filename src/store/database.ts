import { mkdirSync } from "node:fs";
import path from "node:path";
import { PrismaBetterSqlite3 } from "@prisma/adapter-better-sqlite3";
import { PrismaPg } from "@prisma/adapter-pg";
import type { SqlDriverAdapterFactory, SqlMigrationAwareDriverAdapterFactory } from "@prisma/driver-adapter-utils";
import pg from "pg";
import { PrismaClient as PostgresPrismaClient } from "../gen/prisma/postgres/client.js";
import { PrismaClient as SqlitePrismaClient } from "../gen/prisma/sqlite/client.js";
import type { Logger } from "../logger.js";
import { applyMigrations } from "./migrate.js";
import { migrationsDirectory, type Provider } from "./schema-files.js";
import { PrismaSqliteThread } from "./sqlite/adapter.js";

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
  /** The migrations this open applied (empty when the database was current). */
  appliedMigrations: string[];
  close(): Promise<void>;
}

export interface OpenDatabaseOptions {
  logger?: Pick<Logger, "info"> & Partial<Pick<Logger, "error">>;
}

/** Waits this long on a locked SQLite file (another connection writing) before failing. */
const sqliteBusyTimeoutMs = 5_000;
/**
 * How long opening a PostgreSQL connection may take (a server that accepts and never answers) before the request
 * fails with UNAVAILABLE; pg's default is forever. A refused connection fails at once whatever this says.
 */
const postgresConnectTimeoutMs = 5_000;
/**
 * How long a request waits for a free pooled connection: a burst of requests queues for them rather than failing
 * while the database is healthy. Bounded, so that a database that stops answering does not queue requests forever.
 */
const postgresPoolWaitMs = 30_000;
/** Connections of the request path's pool (pg's default). */
const requestPoolSize = 10;
/** Connections of the background pool: claims, outcome writes, progress and heartbeats, a few at a time. */
const backgroundPoolSize = 3;
/** Serializes start-up migrations of replicas sharing one PostgreSQL database (any constant key of Axon's own). */
const migrationLockKey = 0x4158_4f4e; // "AXON"

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
  const target = provider === "sqlite" ? sqliteTarget(databaseUrl, logger) : postgresTarget(databaseUrl);

  const appliedMigrations = await target.migrate(() => applyMigrations(target.migrationAdapter(), migrationsDirectory(provider)));
  logger?.info(
    { database: target.description, provider, migrations_applied: appliedMigrations.length, migrations: appliedMigrations },
    appliedMigrations.length > 0 ? `applied ${appliedMigrations.length} migration(s) to ${target.description}` : `database ${target.description} is current`,
  );

  const prisma =
    provider === "sqlite"
      ? new SqlitePrismaClient({ adapter: target.clientAdapter() })
      : (new PostgresPrismaClient({ adapter: target.clientAdapter() }) as unknown as PrismaClient);
  await prisma.$connect();
  const background = target.backgroundAdapter ? (new PostgresPrismaClient({ adapter: target.backgroundAdapter() }) as unknown as PrismaClient) : prisma;
  await background.$connect();
  await target.warmUp?.();
  return {
    prisma,
    background,
    provider,
    appliedMigrations,
    close: async () => {
      await prisma.$disconnect();
      if (background !== prisma) await background.$disconnect();
    },
  };
}

function providerOf(databaseUrl: string): Provider {
  if (databaseUrl.startsWith("file:")) return "sqlite";
  if (/^postgres(ql)?:\/\//.test(databaseUrl)) return "postgresql";
  throw new Error(`DATABASE_URL must start with file:, postgres:// or postgresql:// (got ${redact(databaseUrl).split(":")[0]}:...)`);
}

interface Target {
  /** What logs may say about the database: never a password. */
  description: string;
  /** Runs the migration step, excluding other processes doing the same. */
  migrate(apply: () => Promise<string[]>): Promise<string[]>;
  migrationAdapter(): SqlMigrationAwareDriverAdapterFactory;
  clientAdapter(): SqlDriverAdapterFactory;
  /** A separate pool for `Database.background`, where the database has pools. */
  backgroundAdapter?(): SqlDriverAdapterFactory;
  /** Opens the pools' connections before the first request needs them. */
  warmUp?(): Promise<void>;
}

function sqliteTarget(databaseUrl: string, logger: OpenDatabaseOptions["logger"]): Target {
  const [location = ""] = databaseUrl.slice("file:".length).split("?");
  // Every connection to ":memory:" is a new database: the migrated one would not be the one the client sees.
  if (location === "" || location === ":memory:") throw new Error("DATABASE_URL must name an SQLite file (file:<path>)");
  const file = path.resolve(location);
  mkdirSync(path.dirname(file), { recursive: true });
  return {
    description: file,
    // SQLite serializes writers itself; the engine applies each migration in a transaction.
    migrate: (apply) => apply(),
    // Migrations run once, before anything is served, on one connection the engine locks exclusively: on the event
    // loop through Prisma's own adapter, which saves starting a thread for them.
    migrationAdapter: () => withPragmas(new PrismaBetterSqlite3({ url: file, timeout: sqliteBusyTimeoutMs })),
    // Requests go through a worker thread (src/store/sqlite/), so statements and commits never stall the event loop.
    clientAdapter: () =>
      new PrismaSqliteThread({
        file,
        busyTimeoutMs: sqliteBusyTimeoutMs,
        pragmas: sqlitePragmas,
        onThreadExit: (error) => logger?.error?.({ err: error, database: file }, "the SQLite thread died; the requests it held failed, the next one starts another"),
      }),
  };
}

/**
 * Every SQLite connection that writes: WAL, so readers never wait for the writer (a property of the file, set again
 * harmlessly), and foreign keys enforced, which SQLite leaves off per connection.
 */
const sqlitePragmas = "PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON;";

function withPragmas(factory: PrismaBetterSqlite3): SqlMigrationAwareDriverAdapterFactory {
  return {
    provider: factory.provider,
    adapterName: factory.adapterName,
    connect: async () => {
      const adapter = await factory.connect();
      await adapter.executeScript(sqlitePragmas);
      return adapter;
    },
    connectToShadowDb: () => factory.connectToShadowDb(),
  };
}

function postgresTarget(databaseUrl: string): Target {
  const pools: pg.Pool[] = [];
  const pool = (max: number) => {
    const created = postgresPool(databaseUrl, max);
    pools.push(created);
    return created;
  };
  return {
    description: redact(databaseUrl),
    migrate: async (apply) => {
      // The engine's own advisory lock gives up after 10 s; this one waits, so a replica starting beside another one
      // that is applying a long migration waits for it instead of failing.
      const client = new pg.Client({ connectionString: databaseUrl });
      await client.connect();
      try {
        await client.query("SELECT pg_advisory_lock($1)", [migrationLockKey]);
        return await apply();
      } finally {
        await client.end(); // ends the session, releasing the lock even if unlocking was never reached
      }
    },
    migrationAdapter: () => postgresMigrationAdapter(databaseUrl),
    clientAdapter: () => new PrismaPg(pool(requestPoolSize), { disposeExternalPool: true }),
    backgroundAdapter: () => new PrismaPg(pool(backgroundPoolSize), { disposeExternalPool: true }),
    warmUp: async () => void (await Promise.all(pools.map(fill))),
  };
}

/**
 * A pool whose requests wait up to `postgresPoolWaitMs` for a free connection but `postgresConnectTimeoutMs` to open
 * one. Its connections are kept while idle (and opened at start, see `warmUp`): a burst then finds them open, instead
 * of opening them all together on a busy machine, where a connection can take longer than the timeout to open.
 */
function postgresPool(databaseUrl: string, max: number): pg.Pool {
  class BoundedConnectClient extends pg.Client {
    constructor(config?: pg.ClientConfig) {
      super({ ...config, connectionTimeoutMillis: postgresConnectTimeoutMs });
    }
  }
  return new pg.Pool({ connectionString: databaseUrl, connectionTimeoutMillis: postgresPoolWaitMs, Client: BoundedConnectClient, max, min: max });
}

/** Opens every connection of `pool`; one that cannot be opened now is opened by the first query that needs it. */
async function fill(pool: pg.Pool): Promise<void> {
  const max = pool.options.max ?? 10;
  await Promise.all(Array.from({ length: max }, () => pool.connect().then((client) => client.release(), () => undefined)));
}

/**
 * What the schema engine applies PostgreSQL migrations through: its own pool, ended when the engine is done with it
 * (so no session of the engine outlives the migration step), sending each migration script whole. PrismaPg splits a
 * script at every `;`, which cuts the dollar-quoted bodies of trigger functions apart; the server splits it correctly
 * itself, and runs it as one transaction.
 */
export function postgresMigrationAdapter(databaseUrl: string): SqlMigrationAwareDriverAdapterFactory {
  const factory = new PrismaPg({ connectionString: databaseUrl });
  return {
    provider: factory.provider,
    adapterName: factory.adapterName,
    connect: async () => {
      const adapter = await factory.connect();
      adapter.executeScript = async (script) => void (await adapter.executeRaw({ sql: script, args: [], argTypes: [] }));
      return adapter;
    },
    connectToShadowDb: () => factory.connectToShadowDb(),
  };
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
