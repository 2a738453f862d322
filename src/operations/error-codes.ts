/**
 * An operation's `error.code` in unYOLO's words (agent-v1.md §11). Rows written before 2026-11-30 hold Axon's older
 * words; they are renamed as they are read rather than migrated, so an old row and a new one read the same.
 */
export function operationErrorCode(stored: string): string {
  return legacyWords[stored] ?? (stored.startsWith("upstream_") && stored !== "upstream_result_unknown" ? `operation_${stored}` : stored);
}

const legacyWords: Record<string, string> = {
  policy_denied: "operation_policy_denied",
  request_denied: "operation_approval_denied",
  request_expired: "operation_approval_expired",
  canceled: "operation_canceled",
  grant_revoked: "operation_canceled",
};
