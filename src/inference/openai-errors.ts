import { AxonError } from "../errors.js";
import { requestTooLargeReason } from "../server/request-body.js";
import { errorInfoOf, httpStatusOf, toConnectError } from "../server/status.js";

/** An error as OpenAI's API and its SDKs shape it: `{"error": {message, type, code, param}}`. */
export interface OpenAiErrorBody {
  message: string;
  type: string;
  code: string | null;
  param: string | null;
}

export interface OpenAiError {
  status: number;
  error: OpenAiErrorBody;
  headers: Record<string, string>;
}

/** Refusals whose HTTP status says more than their google.rpc code's standard mapping. */
const statusOfReason: Record<string, number> = {
  [requestTooLargeReason]: 413,
  UNSUPPORTED_CONTENT_TYPE: 415,
  METHOD_NOT_ALLOWED: 405,
  UPSTREAM_FAILED: 502,
};

/** OpenAI's error types where they say more than the status (a spent quota is no rate limit to wait out). */
const typeOfReason: Record<string, string> = {
  INFERENCE_TOKEN_BUDGET_SPENT: "insufficient_quota",
};

/**
 * Anything thrown -> the error a client sees, through the one mapper every route uses (so nothing but an AxonError's
 * message ever leaves). The ErrorInfo reason becomes `code` in lower case (`unknown_parameter`, `model_not_found`), the
 * first field violation `param`, RetryInfo `Retry-After` (and `retry-after-ms`, which the SDKs read first).
 */
export function openAiErrorOf(thrown: unknown): OpenAiError {
  const mapped = toConnectError(thrown);
  const reason = errorInfoOf(mapped)?.reason ?? "INTERNAL";
  const status = statusOfReason[reason] ?? httpStatusOf(mapped.code);
  const headers: Record<string, string> = {};
  const retryAfter = mapped.metadata.get("retry-after");
  if (retryAfter !== null) {
    headers["retry-after"] = retryAfter;
    headers["retry-after-ms"] = String(Number(retryAfter) * 1000);
  }
  if (status === 401) headers["www-authenticate"] = "Bearer";
  if (status === 405 && thrown instanceof AxonError) headers.allow = thrown.metadata.allow ?? "";
  // A program reads the pending request's id here; an agent reads it in the message.
  if (thrown instanceof AxonError && thrown.metadata.approval_request_id !== undefined) headers["x-axon-approval-request"] = thrown.metadata.approval_request_id;
  // Retrying a spent daily budget within the SDKs' few seconds of back-off can only fail again.
  if (reason === "INFERENCE_TOKEN_BUDGET_SPENT") headers["x-should-retry"] = "false";
  const param = thrown instanceof AxonError ? (thrown.fieldViolations[0]?.field ?? null) : null;
  return { status, error: { message: mapped.rawMessage, type: typeOfReason[reason] ?? typeOfStatus(status), code: reason.toLowerCase(), param }, headers };
}

/** The types OpenAI's API answers with, by status. */
export function typeOfStatus(status: number): string {
  if (status === 401) return "authentication_error";
  if (status === 403) return "permission_error";
  if (status === 429) return "rate_limit_error";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}
