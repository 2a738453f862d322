import { describe, expect, it } from "vitest";
import { MiddlewareChain, MiddlewareFailure, type AgentRun, type AgentState, type Middleware } from "../../../src/agents/middleware-chain.js";
import type { LlmResponse } from "../../../src/llm/llm.js";

const run = { session: { signal: new AbortController().signal } } as unknown as AgentRun;
const answer: LlmResponse = { text: "hi", toolCalls: [], usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0, cost: 0 }, model: "m" };

/** A middleware that writes down each hook it runs. */
function recording(name: string, log: string[]): Middleware {
  return {
    name,
    beforeAgent: async () => void log.push(`${name}.before_agent`),
    beforeModel: async () => void log.push(`${name}.before_model`),
    afterModel: async () => void log.push(`${name}.after_model`),
    afterAgent: async () => void log.push(`${name}.after_agent`),
    wrapModelCall: async (request, handler) => {
      log.push(`${name}.wrap_model_call`);
      const response = await handler(request);
      log.push(`${name}.wrap_model_call done`);
      return response;
    },
    wrapToolCall: async (request, handler) => {
      log.push(`${name}.wrap_tool_call`);
      return handler(request);
    },
  };
}

describe("the middleware chain", () => {
  it("runs before hooks in list order, after hooks in reverse, and nests the wraps with the first outermost", async () => {
    const log: string[] = [];
    const chain = new MiddlewareChain([recording("a", log), recording("b", log)]);
    const state: AgentState = { messages: [] };
    await chain.run("beforeAgent", state, run);
    await chain.run("beforeModel", state, run);
    await chain.wrapModel(async () => (log.push("model"), answer), run)({ systemPrompt: "", messages: [], tools: [], llm: {} as never });
    await chain.run("afterModel", state, run);
    await chain.wrapTool(async () => (log.push("tool"), "result"), run)({ toolCall: { id: "1", name: "t", arguments: {} }, tool: undefined });
    await chain.run("afterAgent", state, run);
    expect(log).toEqual([
      "a.before_agent",
      "b.before_agent",
      "a.before_model",
      "b.before_model",
      "a.wrap_model_call",
      "b.wrap_model_call",
      "model",
      "b.wrap_model_call done",
      "a.wrap_model_call done",
      "b.after_model",
      "a.after_model",
      "a.wrap_tool_call",
      "b.wrap_tool_call",
      "tool",
      "b.after_agent",
      "a.after_agent",
    ]);
  });

  it("applies a hook's messages, and a jump ends the round: the hooks after it do not run", async () => {
    const log: string[] = [];
    const jumping: Middleware = { name: "jumping", beforeModel: async () => ({ messages: [{ role: "user", content: "changed" }], jumpTo: "end" }) };
    const state: AgentState = { messages: [{ role: "user", content: "original" }] };
    expect(await new MiddlewareChain([jumping, recording("b", log)]).run("beforeModel", state, run)).toBe("end");
    expect(state.messages).toEqual([{ role: "user", content: "changed" }]);
    expect(log).toEqual([]);
  });

  it("a middleware that raises fails with an error naming its class and hook; a handler's error passes through wraps unchanged", async () => {
    const raising: Middleware = {
      name: "Raising",
      afterModel: async () => {
        throw new TypeError("bad state");
      },
    };
    const failure = await new MiddlewareChain([raising]).run("afterModel", { messages: [] }, run).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(MiddlewareFailure);
    expect((failure as MiddlewareFailure).message).toBe("the middleware Raising failed in after_model: TypeError: bad state");
    const modelDown = new Error("the model is down");
    const wrapped = new MiddlewareChain([recording("a", []), recording("b", [])]).wrapModel(async () => {
      throw modelDown;
    }, run);
    await expect(wrapped({ systemPrompt: "", messages: [], tools: [], llm: {} as never })).rejects.toBe(modelDown);
  });
});
