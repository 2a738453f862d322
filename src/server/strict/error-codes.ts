import { Code } from "@connectrpc/connect";

/**
 * unYOLO's code word for an error of a strict service, carried in `ErrorInfo.metadata.code` beside Axon's specific
 * UPPER_SNAKE reason (agent-v1.md §11). A reason unYOLO names has its word; the rest take their code's word (every 400
 * is `invalid_request`, every 404 `not_found`), else the reason in lower case.
 */
export function contractCode(code: Code, reason: string, category: string): string {
  const word = wordOfReason[reason];
  if (word !== undefined) return word;
  if (category === "storage") return "operation_store_unavailable";
  return wordOfCode.get(code) ?? reason.toLowerCase();
}

const wordOfReason: Record<string, string> = {
  IDEMPOTENCY_CONFLICT: "idempotency_conflict",
  OPERATION_NOT_CANCELABLE: "operation_not_cancelable",
  STALE_REVISION: "revision_conflict",
  REQUEST_NOT_PENDING: "request_not_pending",
  CLIENT_PENDING_LIMIT: "client_pending_limit",
  CLIENT_OPERATION_LIMIT: "client_active_limit",
  CLIENT_RATE_LIMIT: "submission_rate_limited",
  GLOBAL_OPERATION_LIMIT: "global_active_limit",
  GLOBAL_EXECUTING_LIMIT: "global_execution_limit",
  STORAGE_UNAVAILABLE: "operation_store_unavailable",
  // An oversized body is the client's request, refused as such.
  REQUEST_TOO_LARGE: "invalid_request",
};

const wordOfCode = new Map<Code, string>([
  [Code.InvalidArgument, "invalid_request"],
  [Code.Unauthenticated, "authentication_failed"],
  [Code.NotFound, "not_found"],
]);
