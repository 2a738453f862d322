import { Code } from "@connectrpc/connect";
import { AxonError } from "../errors.js";
import { CAPACITY_RETRY_AFTER_SECONDS, inferenceLimitsFor, windowStartOf, type AdmissionLimits } from "../operations/admission.js";
import type { Clock } from "../operations/clock.js";
import type { DailyTokens } from "./daily-tokens.js";

/**
 * Whether a chat completion may start, by the admission file's `inference_*` limits: the client's daily token budget
 * (counted in the database, so it holds across replicas), its calls per window and its calls answering at once
 * (counted by this replica in memory: N replicas admit up to N times the rate). First refusal wins, in that order.
 */
export class CallAdmission {
  private readonly windows = new Map<string, { start: number; count: number }>();
  private readonly inFlight = new Map<string, number>();

  constructor(
    private readonly limits: AdmissionLimits,
    private readonly tokens: DailyTokens,
    private readonly clock: Clock,
  ) {}

  /** Admits one call, or throws RESOURCE_EXHAUSTED with Retry-After; the caller calls the returned release once it ends. */
  async admit(clientId: string): Promise<() => void> {
    const limits = inferenceLimitsFor(this.limits, clientId);
    if (Number.isFinite(limits.inferenceTokensPerDay)) {
      const used = await this.tokens.usedToday(clientId);
      if (used >= limits.inferenceTokensPerDay) throw budgetSpent(limits.inferenceTokensPerDay, used, this.tokens.secondsToDayEnd());
    }
    const now = this.clock.now();
    const start = windowStartOf(now, limits.windowSeconds).getTime();
    const window = this.windows.get(clientId);
    const count = window !== undefined && window.start === start ? window.count : 0;
    if (count >= limits.inferenceRequestsPerWindow) {
      const retryAfter = Math.max(1, Math.ceil((start + limits.windowSeconds * 1000 - now.getTime()) / 1000));
      throw refusal("INFERENCE_RATE_LIMIT", `at most ${limits.inferenceRequestsPerWindow} chat completions per ${limits.windowSeconds} seconds`, retryAfter, {
        limit: String(limits.inferenceRequestsPerWindow),
        window_seconds: String(limits.windowSeconds),
      });
    }
    const running = this.inFlight.get(clientId) ?? 0;
    if (running >= limits.inferenceInFlight) {
      throw refusal("INFERENCE_IN_FLIGHT_LIMIT", `at most ${limits.inferenceInFlight} chat completions at once`, CAPACITY_RETRY_AFTER_SECONDS, {
        limit: String(limits.inferenceInFlight),
      });
    }
    this.windows.set(clientId, { start, count: count + 1 });
    this.inFlight.set(clientId, running + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.inFlight.get(clientId) ?? 1) - 1;
      if (left > 0) this.inFlight.set(clientId, left);
      else this.inFlight.delete(clientId);
    };
  }
}

function budgetSpent(limit: number, used: number, retryAfterSeconds: number): AxonError {
  return refusal("INFERENCE_TOKEN_BUDGET_SPENT", `the daily budget of ${limit} tokens is spent until the end of the UTC day`, retryAfterSeconds, {
    limit: String(limit),
    used: String(used),
  });
}

function refusal(reason: string, message: string, retryAfterSeconds: number, metadata: Record<string, string>): AxonError {
  return new AxonError(Code.ResourceExhausted, reason, message, { metadata: { category: "rate_limited", ...metadata }, retryAfterSeconds });
}
