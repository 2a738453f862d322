import pg from "pg";
import type { Logger } from "../logger.js";

const channel = "axon_operation_changed";

export interface ReplicaNotifications {
  /** Tells every replica (this one included) that an operation changed. */
  publish(operationId: string): void;
  close(): Promise<void>;
}

/**
 * PostgreSQL LISTEN/NOTIFY between replicas sharing one database: a change committed on one wakes the waits,
 * watches and workers of the others. A lost notification only delays them to their next poll.
 */
export async function listenToReplicas(
  databaseUrl: string,
  onChange: (operationId: string) => void,
  logger: Pick<Logger, "warn">,
): Promise<ReplicaNotifications> {
  const listener = new pg.Client({ connectionString: databaseUrl });
  listener.on("error", (error) => logger.warn({ err: error, category: "storage" }, "replica notifications lost"));
  listener.on("notification", (message) => {
    if (message.channel === channel && message.payload) onChange(message.payload);
  });
  await listener.connect();
  await listener.query(`LISTEN ${channel}`);
  const publisher = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  publisher.on("error", (error) => logger.warn({ err: error, category: "storage" }, "replica notifications lost"));
  return {
    publish(operationId) {
      publisher.query("SELECT pg_notify($1, $2)", [channel, operationId]).catch((error: unknown) => {
        logger.warn({ err: error, category: "storage" }, "could not notify the other replicas");
      });
    },
    async close() {
      await Promise.allSettled([listener.end(), publisher.end()]);
    },
  };
}
