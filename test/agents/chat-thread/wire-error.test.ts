import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { fromWireError, toWireError } from "../../../src/agents/chat-thread/wire-error.js";
import { AxonError } from "../../../src/errors.js";

/** Through structured clone, as postMessage carries it. */
const across = (error: unknown) => fromWireError(structuredClone(toWireError(error)));

describe("errors crossing from the chat thread", () => {
  it("an AxonError keeps its code, reason, message, metadata, field and quota violations and retry delay", () => {
    const error = new AxonError(Code.ResourceExhausted, "TOO_MANY_CHATS", "too many chats in flight. Retry later", {
      metadata: { limit: "4" },
      fieldViolations: [{ field: "arguments.text", description: "is required" }],
      quotaViolations: [{ subject: "client alice", description: "4 chats" }],
      retryAfterSeconds: 2,
    });
    const crossed = across(error);
    expect(crossed).toBeInstanceOf(AxonError);
    expect(crossed).toMatchObject({
      code: error.code,
      reason: error.reason,
      message: error.message,
      metadata: error.metadata,
      fieldViolations: error.fieldViolations,
      quotaViolations: error.quotaViolations,
      retryAfterSeconds: 2,
    });
    expect(across(new AxonError(Code.NotFound, "AGENT_NOT_FOUND", "agent network not found"))).toMatchObject({ retryAfterSeconds: undefined });
  });

  it("any other error keeps its name and message only", () => {
    const crossed = across(Object.assign(new Error("connection refused"), { name: "APIConnectionError", secret: "x" }));
    expect(crossed).not.toBeInstanceOf(AxonError);
    expect(crossed).toMatchObject({ name: "APIConnectionError", message: "connection refused" });
    expect(crossed).not.toHaveProperty("secret");
    expect(across("a string")).toMatchObject({ name: "Error", message: "a string" });
  });
});
