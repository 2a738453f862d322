import type { Logger } from "../../logger.js";
import type { Database } from "../../store/database.js";
import type { Clock } from "../clock.js";
import { capacityLock } from "./capacity-lock.js";
import { SealedPayloads } from "./sealed-payloads.js";
import { loadSealingKey } from "./sealing.js";
import type { TransferSettings } from "./settings.js";
import { TransferStreams } from "./streams.js";

export interface Transfers {
  sealedPayloads: SealedPayloads;
  streams: TransferStreams;
  /** Removes expired sealed payloads and expired or abandoned streams. */
  sweep(): Promise<void>;
  close(): void;
}

export interface TransfersOptions {
  database: Pick<Database, "prisma" | "provider">;
  settings: TransferSettings;
  /** Where the sealing key is generated when AXON_SEALING_KEY is not set. */
  dataDir: string;
  logger: Logger;
  clock?: Clock;
  /** How often expired transfers are removed; 0 = never on its own (tests sweep by hand). Default 60 s. */
  sweepMs?: number;
}

/** Sealed payloads and streams (Agent V1 §6), stored in the database so that every replica serves them. */
export async function createTransfers(options: TransfersOptions): Promise<Transfers> {
  const { database, settings, logger } = options;
  const clock = options.clock ?? { now: () => new Date() };
  const { key, source } = await loadSealingKey(settings.sealingKey, options.dataDir);
  if (source === "generated") logger.info("generated a sealing key for sealed payloads under the data directory");
  if (source !== "env" && database.provider === "postgresql") {
    logger.warn("AXON_SEALING_KEY is not set: replicas sharing this database cannot open each other's sealed payloads");
  }
  const lock = capacityLock(database.prisma, database.provider);
  const sealedPayloads = new SealedPayloads({
    prisma: database.prisma,
    lock,
    key,
    clock,
    limits: {
      ttlSeconds: settings.sealedTtlSeconds,
      maxPerClient: settings.sealedMaxPerClient,
      maxClientBytes: settings.sealedMaxClientBytes,
      maxTotalBytes: settings.sealedMaxTotalBytes,
    },
  });
  const streams = new TransferStreams({
    prisma: database.prisma,
    lock,
    clock,
    limits: {
      ttlSeconds: settings.streamTtlSeconds,
      uploadTimeoutSeconds: settings.streamUploadTimeoutSeconds,
      maxBytes: settings.streamMaxBytes,
      maxPerClient: settings.streamMaxPerClient,
      maxClientBytes: settings.streamMaxClientBytes,
      maxTotalBytes: settings.streamMaxTotalBytes,
    },
  });
  const sweep = async () => {
    await sealedPayloads.sweep();
    await streams.sweep();
  };
  const sweepMs = options.sweepMs ?? 60_000;
  const sweeper = sweepMs > 0 ? setInterval(() => void sweep().catch(() => logger.warn({ category: "storage" }, "transfer sweep failed")), sweepMs) : undefined;
  sweeper?.unref();
  return {
    sealedPayloads,
    streams,
    sweep,
    close: () => clearInterval(sweeper),
  };
}
