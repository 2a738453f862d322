import { describe, expect, it } from "vitest";
import { openAiErrorOf } from "../../src/inference/openai-errors.js";
import { AxonError, Code } from "../../src/errors.js";

describe("errors in OpenAI's shape", () => {
  it.each([
    [Code.InvalidArgument, "INVALID_PARAMETER", 400, "invalid_request_error"],
    [Code.Unauthenticated, "UNAUTHENTICATED", 401, "authentication_error"],
    [Code.PermissionDenied, "OPERATION_POLICY_DENIED", 403, "permission_error"],
    [Code.NotFound, "MODEL_NOT_FOUND", 404, "invalid_request_error"],
    [Code.Aborted, "CONFLICT", 409, "invalid_request_error"],
    [Code.ResourceExhausted, "INFERENCE_RATE_LIMIT", 429, "rate_limit_error"],
    [Code.ResourceExhausted, "INFERENCE_TOKEN_BUDGET_SPENT", 429, "insufficient_quota"],
    [Code.Internal, "INTERNAL", 500, "server_error"],
    [Code.Unavailable, "UPSTREAM_FAILED", 502, "server_error"],
    [Code.Unavailable, "STORAGE_UNAVAILABLE", 503, "server_error"],
  ])("code %s, reason %s: HTTP %s, type %s", (code, reason, status, type) => {
    expect(openAiErrorOf(new AxonError(code, reason, "m"))).toMatchObject({ status, error: { message: "m", type, code: reason.toLowerCase(), param: null } });
  });

  it("says when to retry in Retry-After and retry-after-ms, and that a spent budget is not worth retrying", () => {
    expect(openAiErrorOf(new AxonError(Code.ResourceExhausted, "INFERENCE_RATE_LIMIT", "m", { retryAfterSeconds: 7 })).headers).toEqual({ "retry-after": "7", "retry-after-ms": "7000" });
    expect(openAiErrorOf(new AxonError(Code.ResourceExhausted, "INFERENCE_TOKEN_BUDGET_SPENT", "m", { retryAfterSeconds: 60 })).headers["x-should-retry"]).toBe("false");
  });

  it("names the field as param, and answers anything unexpected with a message that says nothing of it", () => {
    const field = new AxonError(Code.InvalidArgument, "INVALID_PARAMETER", "m", { fieldViolations: [{ field: "messages[0].role", description: "d" }] });
    expect(openAiErrorOf(field).error.param).toBe("messages[0].role");
    expect(openAiErrorOf(new Error("connect ECONNREFUSED 10.0.0.7:5432 password=hunter2"))).toEqual({
      status: 500,
      error: { message: "internal error", type: "server_error", code: "internal", param: null },
      headers: {},
    });
  });
});
