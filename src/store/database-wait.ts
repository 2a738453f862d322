import { setTimeout as delay } from "node:timers/promises";
import type { Logger } from "../logger.js";
import { openDatabase, redact, type Database } from "./database.js";
import { isStorageUnavailable } from "./storage-errors.js";

/**
 * How often a replica waiting for its database tries again: often enough to be ready within about a second of the
 * database coming back; each try is one connection attempt, so it costs the database next to nothing.
 */
const retryMs = 500;
/** Warnings while waiting: one at start, then after 1, 2, 4 ... seconds, and every 30 s from then on. */
const firstWarningMs = 1_000;
const maxWarningMs = 30_000;

/** A database that waiting cannot fix (a malformed URL, refused credentials, no such database): the process stops. */
export class DatabaseConfigurationError extends Error {
  override readonly name = "DatabaseConfigurationError";
}

export interface DatabaseWait {
  /** Resolves with the database once it is open; rejects with a DatabaseConfigurationError (or when stopped). */
  opened: Promise<Database>;
  /** Settles with the first try: true if that opened it, false if it is now waiting; rejects as `opened` does. */
  firstTry: Promise<boolean>;
  /** Stops waiting: `opened` rejects, and a database opened meanwhile is closed. */
  stop(): void;
}

/**
 * Opens the database, waiting for it as long as it is merely unreachable (down, restarting, its volume not mounted
 * yet) instead of failing: an orchestrator backs off for minutes from a crash loop, a replica that waits is ready the
 * moment its database is. Migrations run with the open that succeeds. Anything else fails at once.
 */
export function waitForDatabase(databaseUrl: string, logger: Logger): DatabaseWait {
  const stopping = new AbortController();
  const database = redact(databaseUrl);
  let settleFirstTry: (opened: boolean) => void = () => undefined;
  const firstTry = new Promise<boolean>((resolve) => (settleFirstTry = resolve));

  const opened = (async (): Promise<Database> => {
    const startedAt = Date.now();
    let nextWarningAt = startedAt;
    let warningMs = firstWarningMs;
    let waited = false;
    for (;;) {
      let open: Database | undefined;
      try {
        // Once it has waited, readiness comes first: the pools fill while it serves.
        open = await openDatabase(databaseUrl, { logger, warmUpFirst: !waited });
      } catch (error) {
        if (!isReachableLater(error)) throw new DatabaseConfigurationError(`cannot open the database ${database}: ${describe(error)}`, { cause: error });
        if (Date.now() >= nextWarningAt) {
          logger.warn(
            { database, category: "storage", reason: describe(error), waited_ms: Date.now() - startedAt, next_warning_ms: warningMs },
            "the database cannot be reached; waiting for it (not ready until then)",
          );
          nextWarningAt = Date.now() + warningMs;
          warningMs = Math.min(warningMs * 2, maxWarningMs);
        }
      }
      if (open !== undefined) {
        if (stopping.signal.aborted) {
          await open.close();
          throw new Error("stopped before the database opened");
        }
        if (waited) logger.info({ database, waited_ms: Date.now() - startedAt }, "the database is reachable: serving");
        settleFirstTry(true);
        return open;
      }
      waited = true;
      settleFirstTry(false);
      await delay(retryMs, undefined, { signal: stopping.signal });
    }
  })();
  return {
    opened,
    // A first try that fails for good rejects both; `opened` alone carries a later failure.
    firstTry: Promise.race([firstTry, opened.then(() => true)]),
    stop: () => stopping.abort(),
  };
}

/** Node's file system errors for a folder that is missing, unmounted or read-only: an SQLite volume not there yet. */
const unavailableFileCodes = new Set(["ENOENT", "EACCES", "EPERM", "EROFS"]);

/** True when waiting can fix it: the database is unreachable, or its SQLite file cannot be opened or written yet. */
function isReachableLater(error: unknown): boolean {
  if (isStorageUnavailable(error)) return true;
  const code = typeof error === "object" && error !== null ? (error as { code?: unknown }).code : undefined;
  if (typeof code !== "string") return false;
  return unavailableFileCodes.has(code) || code === "SQLITE_CANTOPEN" || code.startsWith("SQLITE_READONLY") || code.startsWith("SQLITE_IOERR");
}

/** The error in a line for the log: its message (the driver's, never carrying a password) and code. */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" && !error.message.includes(code) ? `${error.message} (${code})` : error.message;
}
