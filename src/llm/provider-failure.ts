/**
 * A provider's failure reduced to what is safe to show: an HTTP status (or `timeout`, `connection`, `bad_response`)
 * and the provider's error code. The provider's own text is dropped: it can quote keys, URLs or the prompt.
 */
export class ProviderFailure extends Error {
  override readonly name = "ProviderFailure";

  constructor(
    readonly status: string,
    readonly errorType?: string,
  ) {
    super(`the LLM provider failed with ${status}`);
  }
}

/** Provider error codes are short identifiers (`rate_limit_exceeded`); anything else is not passed on. */
export function safeErrorType(value: unknown): string | undefined {
  return typeof value === "string" && /^[A-Za-z0-9_.-]{1,64}$/.test(value) ? value : undefined;
}
