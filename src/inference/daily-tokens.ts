import type { Clock } from "../operations/clock.js";
import type { Database } from "../store/database.js";

/** Where the day's tokens are kept: a row per client and UTC day (`InferenceTokens`), shared by the replicas. */
export interface DailyTokenStore {
  /** The day's total so far. */
  read(clientId: string, day: string): Promise<number>;
  /** Adds to the day's total and returns the new total, in one statement. */
  add(clientId: string, day: string, tokens: number): Promise<number>;
}

/**
 * Each client's tokens today, as the budget check reads them: the database's total across replicas, read when a call
 * with a budget is admitted (one indexed read; a client without a budget costs none), never less than what this
 * replica has itself added since. A budget is thereby exceeded by at most the calls in flight when it ran out.
 */
export class DailyTokens {
  private readonly seen = new Map<string, { day: string; tokens: number }>();

  constructor(
    private readonly store: DailyTokenStore,
    private readonly clock: Clock,
  ) {}

  async usedToday(clientId: string): Promise<number> {
    const day = dayOf(this.clock.now());
    return this.remember(clientId, day, await this.store.read(clientId, day));
  }

  /** Counts a finished call's tokens (after it has answered: nothing waits on this). */
  async add(clientId: string, tokens: number): Promise<void> {
    if (tokens <= 0) return;
    const day = dayOf(this.clock.now());
    // This replica's own spending counts at once: its next call must not slip past the budget while the write is out.
    const seen = this.seen.get(clientId);
    if (seen !== undefined && seen.day === day) seen.tokens += tokens;
    this.remember(clientId, day, await this.store.add(clientId, day, tokens));
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

export function dayOf(time: Date): string {
  return time.toISOString().slice(0, 10);
}

/** The store on the operations database: one upsert per call, after it. */
export function databaseTokenStore(database: Pick<Database, "prisma">): DailyTokenStore {
  return {
    async read(clientId, day) {
      const [row] = await database.prisma.$queryRaw<{ tokens: bigint | number }[]>`
        SELECT "tokens" FROM "InferenceTokens" WHERE "clientId" = ${clientId} AND "day" = ${day}`;
      return row === undefined ? 0 : Number(row.tokens);
    },
    async add(clientId, day, tokens) {
      const [row] = await database.prisma.$queryRaw<{ tokens: bigint | number }[]>`
        INSERT INTO "InferenceTokens" ("clientId", "day", "tokens") VALUES (${clientId}, ${day}, ${tokens})
        ON CONFLICT ("clientId", "day") DO UPDATE SET "tokens" = "InferenceTokens"."tokens" + excluded."tokens"
        RETURNING "tokens"`;
      return Number(row!.tokens);
    },
  };
}
