import { describe, expect, it } from "vitest";
import { agentToolCallProvider, toolCallHolds } from "../../../src/operations/providers/agent-tool-call.js";
import type { Allowed, NativeCall, Refused } from "../../../src/operations/native-calls.js";

const call = { clientId: "alice", network: "refunds", agent: "Clerk", tool: "Refund", arguments: { amount: 5 }, allowedDecisions: ["approve", "edit"], description: "Refund 5" };

describe("agent.tool_call", () => {
  it("is a native operation whose target is the network, agent and tool", () => {
    expect(agentToolCallProvider.native).toBe(true);
    expect(agentToolCallProvider.validate({ network: "refunds", agent: "Clerk", tool: "Refund" }, {}, "alice")).toEqual([]);
    expect(agentToolCallProvider.validate({ network: "refunds", extra: 1 }, {}, "alice")).toEqual([
      { field: "target.agent", description: "is required: the agent the tool call belongs to" },
      { field: "target.tool", description: "is required: the tool the tool call belongs to" },
      { field: "target.extra", description: "unknown field" },
    ]);
    expect(agentToolCallProvider.present({ network: "refunds", agent: "Clerk", tool: "Refund" }, { description: "Refund 5 to Ada" })).toEqual({
      title: "Run Refund for Clerk in refunds",
      summary: "Refund 5 to Ada",
    });
  });

  it("holds a call as the native-call path decides it, the operator's edit in place of the arguments", async () => {
    const held: NativeCall[] = [];
    const finished: unknown[] = [];
    const allowed: Allowed = { effect: "allowed", via: { approval: "req_1" }, arguments: { arguments: { amount: 1 }, allowed_decisions: ["approve", "edit"] }, finish: async (outcome) => void finished.push(outcome) };
    const holds = toolCallHolds(() => ({ hold: async (native) => (held.push(native), allowed) }));
    const decision = await holds.hold(call, new AbortController().signal, () => {});
    expect(held[0]).toMatchObject({
      clientId: "alice",
      operation: "agent.tool_call",
      target: { network: "refunds", agent: "Clerk", tool: "Refund" },
      detail: { arguments: { amount: 5 }, allowed_decisions: ["approve", "edit"], description: "Refund 5" },
    });
    expect(decision).toMatchObject({ approved: true, arguments: { amount: 1 } });
    if (decision.approved) decision.finish({ ok: false, message: "the tool failed" });
    expect(finished).toEqual([{ ok: false, code: "tool_failed", message: "the tool failed" }]);
  });

  it("a refusal carries the operator's reason", async () => {
    const refused: Refused = { effect: "refused", code: "operation_approval_denied", message: "an operator denied it", reason: "not today" };
    const decision = await toolCallHolds(() => ({ hold: async () => refused })).hold(call, new AbortController().signal, () => {});
    expect(decision).toEqual({ approved: false, code: "operation_approval_denied", message: "an operator denied it", reason: "not today" });
  });
});
