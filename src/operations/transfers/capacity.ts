import { Code } from "@connectrpc/connect";
import { AxonError } from "../../errors.js";

/** Stored transfers free up when used, downloaded or expired: worth asking again soon, as for admission capacity. */
const retryAfterSeconds = 2;

/** RESOURCE_EXHAUSTED (429) with RetryInfo and QuotaFailure, as every rate_limited refusal (spec §5, §7). */
export function capacityRefusal(reason: string, message: string, clientId: string | undefined, limit: number, description: string): AxonError {
  return new AxonError(Code.ResourceExhausted, reason, message, {
    metadata: { category: "rate_limited", limit: String(limit), scope: clientId === undefined ? "global" : "client", retry_after_seconds: String(retryAfterSeconds) },
    retryAfterSeconds,
    quotaViolations: [{ subject: clientId === undefined ? "global" : `client:${clientId}`, description }],
  });
}
