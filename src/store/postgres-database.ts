import { PrismaPg } from "@prisma/adapter-pg";
import type { SqlMigrationAwareDriverAdapterFactory } from "@prisma/driver-adapter-utils";
import pg from "pg";
import { PrismaClient as PostgresPrismaClient } from "../gen/prisma/postgres/client.js";
import type { DatabaseTarget, PrismaClient } from "./database.js";

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

/** A PostgreSQL database shared by replicas: migrations under a lock of Axon's own, two pools kept open. */
export function postgresTarget(databaseUrl: string, description: string): DatabaseTarget {
  const pools: pg.Pool[] = [];
  const pool = (max: number) => {
    const created = postgresPool(databaseUrl, max);
    pools.push(created);
    return created;
  };
  return {
    description,
    migrate: async (apply) => {
      // The engine's own advisory lock gives up after 10 s; this one waits, so a replica starting beside another one
      // that is applying a long migration waits for it instead of failing.
      // Bounded like the pools' connections: a database that accepts and never answers is waited for, not hung on.
      const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: postgresConnectTimeoutMs });
      await client.connect();
      try {
        await client.query("SELECT pg_advisory_lock($1)", [migrationLockKey]);
        return await apply();
      } finally {
        await client.end(); // ends the session, releasing the lock even if unlocking was never reached
      }
    },
    migrationAdapter: () => postgresMigrationAdapter(databaseUrl),
    client: () => postgresClient(pool(requestPoolSize)),
    backgroundClient: () => postgresClient(pool(backgroundPoolSize)),
    warmUp: async () => void (await Promise.all(pools.map(fill))),
  };
}

/** Both generated clients share one model API; the SQLite one's type stands for both (see `PrismaClient`). */
function postgresClient(pool: pg.Pool): PrismaClient {
  return new PostgresPrismaClient({ adapter: new PrismaPg(pool, { disposeExternalPool: true, statementNameGenerator: statementName as (query: { sql: string }) => string }) }) as unknown as PrismaClient;
}

/** How many distinct statement texts are prepared: pg keeps each for a connection's life, so they must be few. */
const preparedStatementLimit = 512;
const statementNames = new Map<string, string>();
/** `SELECT *`, `t.*`, `RETURNING *`: columns a migration may add to, which PostgreSQL refuses under a prepared statement. */
const everyColumn = /(?:select|returning|,)\s*\*|\.\*/i;

/**
 * A name for each of the first `preparedStatementLimit` statement texts: a connection then parses and plans one
 * once and afterwards only binds its values, as the same few texts come again and again. Prisma's texts are few,
 * but for lists of every length (`IN (...)`, several rows at once): the texts past the limit go unnamed, which pg
 * sends as unnamed statements (its type says a name is always given), and so do those that select every column.
 */
function statementName({ sql }: { sql: string }): string | undefined {
  const known = statementNames.get(sql);
  if (known !== undefined || statementNames.size >= preparedStatementLimit || everyColumn.test(sql)) return known;
  const name = `axon_${statementNames.size}`;
  statementNames.set(sql, name);
  return name;
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
