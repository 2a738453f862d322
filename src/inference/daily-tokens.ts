import type { Logger } from "../logger.js";
import type { Clock } from "../operations/clock.js";
import { operationsStore, queryRows } from "../operations/store.js";
import { Prisma, type Database } from "../store/database.js";

/** One client's tokens to add to one day's total. */
export interface TokenAddition {
  clientId: string;
  day: string;
  tokens: number;
}

/** Where the day's tokens are kept: a row per client and UTC day (`InferenceTokens`), shared by the replicas. */
export interface DailyTokenStore {
  /** The day's total so far. */
  read(clientId: string, day: string): Promise<number>;
  /** Adds to the days' totals in one statement; resolves with the new totals. */
  add(additions: readonly TokenAddition[]): Promise<TokenAddition[]>;
}

/** How long an addition may wait for others to share its statement. */
const writeAfterMs = 50;

/**
 * Each client's tokens today. The budget check reads the database's total across replicas when a call with a budget
 * is admitted (one indexed read; a client without a budget costs none), never less than what this replica has itself
 * added since. Additions are counted here at once and written together, after the calls, one statement every few
 * milliseconds: a busy replica pays a fraction of a statement per call, and no call waits for it. A budget is
 * thereby exceeded by at most the calls in flight when it ran out, and what one replica spent is seen by the others
 * within a moment.
 */
export class DailyTokens {
  private readonly seen = new Map<string, { day: string; tokens: number }>();
  private waiting = new Map<string, TokenAddition>();
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: DailyTokenStore,
    private readonly clock: Clock,
    private readonly logger?: Pick<Logger, "error">,
  ) {}

  async usedToday(clientId: string): Promise<number> {
    const day = dayOf(this.clock.now());
    const stored = await this.store.read(clientId, day);
    const waiting = this.waiting.get(`${clientId}\n${day}`)?.tokens ?? 0;
    return this.remember(clientId, day, stored + waiting);
  }

  /** Counts a finished call's tokens: at once on this replica, in the database with the next write. */
  add(clientId: string, tokens: number): void {
    if (tokens <= 0) return;
    const day = dayOf(this.clock.now());
    const seen = this.seen.get(clientId);
    if (seen !== undefined && seen.day === day) seen.tokens += tokens;
    const key = `${clientId}\n${day}`;
    const waiting = this.waiting.get(key);
    if (waiting) waiting.tokens += tokens;
    else this.waiting.set(key, { clientId, day, tokens });
    this.timer ??= setTimeout(() => void this.flush(), writeAfterMs);
  }

  /** Writes what is waiting; resolves once everything added so far is written (or its failure logged). */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = [...this.waiting.values()];
    this.waiting = new Map();
    if (batch.length > 0) {
      this.writing = this.writing.then(() =>
        this.store.add(batch).then(
          (totals) => totals.forEach(({ clientId, day, tokens }) => this.remember(clientId, day, tokens)),
          (error: unknown) => this.logger?.error({ err: error, category: "storage", clients: batch.length }, "the day's tokens could not be counted"),
        ),
      );
    }
    return this.writing;
  }

  /** Seconds until the UTC day ends, when a spent budget is whole again. */
  secondsToDayEnd(): number {
    const now = this.clock.now().getTime();
    const dayMs = 86_400_000;
    return Math.max(1, Math.ceil((Math.floor(now / dayMs) * dayMs + dayMs - now) / 1000));
  }

  private remember(clientId: string, day: string, tokens: number): number {
    const seen = this.seen.get(clientId);
    // Within a day the count only grows: a total read before one of this replica's additions landed is not newer.
    const known = seen !== undefined && seen.day === day ? Math.max(seen.tokens, tokens) : tokens;
    this.seen.set(clientId, { day, tokens: known });
    return known;
  }
}

/** The UTC day of `time`, `YYYY-MM-DD`; the last one asked for is kept, since nearly every call asks for the same. */
export function dayOf(time: Date): string {
  const ms = time.getTime();
  if (ms < lastDay.start || ms >= lastDay.start + 86_400_000) {
    const start = Math.floor(ms / 86_400_000) * 86_400_000;
    lastDay = { start, day: new Date(start).toISOString().slice(0, 10) };
  }
  return lastDay.day;
}

let lastDay = { start: Number.NEGATIVE_INFINITY, day: "" };

/** The store on the operations database, through the statements that skip Prisma's query compiler on SQLite. */
export function databaseTokenStore(database: Pick<Database, "prisma" | "provider" | "direct">): DailyTokenStore {
  return {
    async read(clientId, day) {
      const [row] = await queryRows<{ tokens: bigint | number }>(
        operationsStore(database),
        Prisma.sql`SELECT "tokens" FROM "InferenceTokens" WHERE "clientId" = ${clientId} AND "day" = ${day}`,
      );
      return row === undefined ? 0 : Number(row.tokens);
    },
    async add(additions) {
      const values = Prisma.join(additions.map(({ clientId, day, tokens }) => Prisma.sql`(${clientId}, ${day}, ${tokens})`));
      const rows = await queryRows<{ clientId: string; day: string; tokens: bigint | number }>(
        operationsStore(database),
        Prisma.sql`INSERT INTO "InferenceTokens" ("clientId", "day", "tokens") VALUES ${values}
          ON CONFLICT ("clientId", "day") DO UPDATE SET "tokens" = "InferenceTokens"."tokens" + excluded."tokens"
          RETURNING "clientId", "day", "tokens"`,
      );
      return rows.map((row) => ({ clientId: row.clientId, day: row.day, tokens: Number(row.tokens) }));
    },
  };
}
