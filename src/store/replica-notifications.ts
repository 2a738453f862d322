import { setTimeout as delay } from "node:timers/promises";
import pg from "pg";
import type { Logger } from "../logger.js";

const channel = "axon_operation_changed";
/** A refused connection fails at once; this bounds one that is never answered. */
const connectTimeoutMs = 5_000;
/** Reconnect backoff after the listening connection is lost: doubles from the first to the cap. */
const firstRetryMs = 250;
const maxRetryMs = 5_000;

export interface ReplicaNotifications {
  /** Tells every replica (this one included) that an operation changed: its id, and its new state when known. */
  publish(message: string): void;
  close(): Promise<void>;
}

/**
 * PostgreSQL LISTEN/NOTIFY between replicas sharing one database: a change committed on one wakes the waits,
 * watches and workers of the others. A lost notification only delays them to their next poll, so when the
 * database restarts the listening connection is simply opened again, with a capped backoff.
 */
export async function listenToReplicas(
  databaseUrl: string,
  onChange: (message: string) => void,
  logger: Pick<Logger, "warn" | "info">,
): Promise<ReplicaNotifications> {
  const closing = new AbortController();
  let listener: pg.Client | undefined;

  const listen = async (): Promise<pg.Client> => {
    const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: connectTimeoutMs });
    // Every loss also ends the client, which is where it is handled; without a listener 'error' would crash the process.
    client.on("error", () => undefined);
    client.on("notification", (message) => {
      if (message.channel === channel && message.payload) onChange(message.payload);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${channel}`);
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
    client.once("end", () => {
      if (closing.signal.aborted) return;
      logger.warn({ category: "storage" }, "replica notifications lost, reconnecting");
      void reconnect();
    });
    return client;
  };

  const reconnect = async (): Promise<void> => {
    listener = undefined;
    for (let retryMs = firstRetryMs; !closing.signal.aborted; retryMs = Math.min(retryMs * 2, maxRetryMs)) {
      const aborted = await delay(retryMs, false, { signal: closing.signal }).catch(() => true);
      if (aborted) return;
      const client = await listen().catch(() => undefined);
      if (client === undefined) continue;
      if (closing.signal.aborted) {
        await client.end().catch(() => undefined);
        return;
      }
      listener = client;
      logger.info({ category: "storage" }, "replica notifications restored");
      return;
    }
  };

  listener = await listen();
  const publisher = new pg.Pool({ connectionString: databaseUrl, max: 2, connectionTimeoutMillis: connectTimeoutMs });
  // An idle connection dropped by the server: the pool opens another for the next publish.
  publisher.on("error", () => undefined);
  // The changes of one turn of the event loop go out in one query: a burst of them takes a few round trips, not one each.
  let pending: string[] = [];
  const flush = () => {
    const messages = pending;
    pending = [];
    publisher.query("SELECT pg_notify($1, message) FROM unnest($2::text[]) AS message", [channel, messages]).catch((error: unknown) => {
      logger.warn({ err: error, category: "storage" }, "could not notify the other replicas");
    });
  };
  return {
    publish(message) {
      if (pending.push(message) === 1) setImmediate(flush);
    },
    async close() {
      closing.abort();
      await Promise.allSettled([listener?.end(), publisher.end()]);
    },
  };
}
