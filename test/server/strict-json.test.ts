import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { operationErrorCode } from "../../src/operations/error-codes.js";
import { findDuplicateKey } from "../../src/server/strict/duplicate-keys.js";
import { contractCode } from "../../src/server/strict/error-codes.js";
import { parseStrictBody } from "../../src/server/strict/json-body.js";
import { thrown } from "../support/thrown.js";

describe("the duplicate-key scan", () => {
  it.each([
    ['{"a":1,"a":2}', "a"],
    ['{"a":{"b":[1,{"c":1,"c":2}]}}', "a.b[1].c"],
    ['{"a":[[{"x":1,"x":1}]]}', "a[0][0].x"],
    ['{"\\u0061":1,"a":2}', "a"],
    ['{"q":"a \\"quoted\\" \\\\","q":3}', "q"],
    ['{"k\\u0000":1,"k\\u0000":2}', "k"],
  ])("%s has a duplicate at %s", (text, path) => {
    expect(findDuplicateKey(text)).toBe(path);
  });

  it.each(['{"a":1,"b":{"a":1}}', '[{"k":1},{"k":2}]', '{"s":"\\"a\\":1,\\"a\\":2"}', '{"a":"\\\\","b":"{"}', "{}", "[]"])("%s has none", (text) => {
    expect(findDuplicateKey(text)).toBeUndefined();
  });

  it("walks 100,000 levels of nesting without running out of stack", () => {
    const deep = `${'{"a":'.repeat(100_000)}1${"}".repeat(100_000)}`;
    expect(findDuplicateKey(deep)).toBeUndefined();
  });
});

describe("a strict body", () => {
  const body = (text: string) => Buffer.from(text);

  it("is one JSON object, at most 2 MiB", async () => {
    expect(parseStrictBody(body('{"a":1}'))).toEqual({ a: 1 });
    expect(parseStrictBody(body("  "))).toBeUndefined();
    for (const text of ['{"a":1} x', "[]", "1", '{"a":1,"a":1}', `{"a":"${"x".repeat(2 * 1024 * 1024)}"}`]) {
      const error = await thrown(async () => parseStrictBody(body(text)));
      expect(error, text).toMatchObject({ code: Code.InvalidArgument });
    }
  });
});

describe("unYOLO's words", () => {
  it("name each error by reason, else by code", () => {
    expect(contractCode(Code.Aborted, "STALE_REVISION", "conflict")).toBe("revision_conflict");
    expect(contractCode(Code.ResourceExhausted, "CLIENT_RATE_LIMIT", "rate_limited")).toBe("submission_rate_limited");
    expect(contractCode(Code.ResourceExhausted, "GLOBAL_EXECUTING_LIMIT", "rate_limited")).toBe("global_execution_limit");
    expect(contractCode(Code.InvalidArgument, "INVALID_CURSOR", "rejected")).toBe("invalid_request");
    expect(contractCode(Code.NotFound, "CURSOR_NOT_FOUND", "rejected")).toBe("not_found");
    expect(contractCode(Code.Unauthenticated, "UNAUTHENTICATED", "authentication")).toBe("authentication_failed");
    expect(contractCode(Code.Internal, "INTERNAL", "storage")).toBe("operation_store_unavailable");
    expect(contractCode(Code.Aborted, "REQUEST_NOT_ACTIVE", "conflict")).toBe("request_not_active");
  });

  it("rename an operation's older error codes as they are read", () => {
    expect(operationErrorCode("policy_denied")).toBe("operation_policy_denied");
    expect(operationErrorCode("request_denied")).toBe("operation_approval_denied");
    expect(operationErrorCode("request_expired")).toBe("operation_approval_expired");
    expect(operationErrorCode("canceled")).toBe("operation_canceled");
    expect(operationErrorCode("upstream_unavailable")).toBe("operation_upstream_unavailable");
    expect(operationErrorCode("upstream_result_unknown")).toBe("upstream_result_unknown");
    expect(operationErrorCode("operation_canceled")).toBe("operation_canceled");
    expect(operationErrorCode("agent_chat_failed")).toBe("agent_chat_failed");
  });
});
