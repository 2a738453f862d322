import path from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { ScriptedRequest } from "../../support/scripted-llm/scripted-llm.js";
import { projectRoot } from "../../support/server.js";
import { MiddlewareNetworks } from "./harness.js";

/** A front man (instructions "Front.") with the given middleware and tools, and an LLM helper and a flaky coded tool. */
function network(middleware: string, tools = `["Helper"]`): string {
  return `{
    "llm_config": { "model_name": "gpt-4o-mini" },
    "tools": [
      { "name": "Front", "function": { "description": "Answers." }, "instructions": "Front.", "tools": ${tools}, "middleware": ${middleware} },
      { "name": "Helper", "function": { "description": "Helps.", "parameters": { "type": "object", "properties": { "q": { "type": "string" } } } }, "instructions": "Helper." },
      { "name": "Other", "function": { "description": "Does other things." }, "instructions": "Other." },
      { "name": "Flaky", "class": "flaky.Flaky", "function": { "description": "Sometimes fails.", "parameters": { "type": "object", "properties": { "failures": { "type": "integer" } } } } }
    ]
  }`;
}

const m = (className: string, args: object = {}) => JSON.stringify({ class: `langchain.agents.middleware.${className}`, args });

const toFront = (request: ScriptedRequest) => request.system?.startsWith("Front.") === true;

describe("LangChain's prebuilt middleware in Axon's agent loop", () => {
  let networks: MiddlewareNetworks;
  beforeAll(async () => {
    networks = await MiddlewareNetworks.start(
      {
        model_limit: network(`[${m("ModelCallLimitMiddleware", { run_limit: 1 })}]`),
        model_limit_error: network(`[${m("ModelCallLimitMiddleware", { run_limit: 1, exit_behavior: "error" })}]`),
        tool_limit: network(`[${m("ToolCallLimitMiddleware", { tool_name: "Helper", run_limit: 1 })}]`),
        tool_limit_end: network(`[${m("ToolCallLimitMiddleware", { tool_name: "Helper", run_limit: 1, exit_behavior: "end" })}]`),
        fallback: network(`[${m("ModelFallbackMiddleware", { first_model: "openai:gpt-4o" })}]`),
        model_retry: network(`[${m("ModelRetryMiddleware", { max_retries: 2, initial_delay: 0, jitter: false })}]`),
        tool_retry: network(`[${m("ToolRetryMiddleware", { max_retries: 2, initial_delay: 0, tools: ["Flaky"] })}]`, `["Flaky"]`),
        tool_retry_raise: network(`[${m("ToolRetryMiddleware", { max_retries: 1, initial_delay: 0, on_failure: "raise" })}]`, `["Flaky"]`),
        selector: network(`[${m("LLMToolSelectorMiddleware", { max_tools: 1, always_include: ["Flaky"] })}]`, `["Helper", "Other", "Flaky"]`),
        context_editing: network(`[${m("ContextEditingMiddleware", { edits: [{ class: "langchain.agents.middleware.ClearToolUsesEdit", args: { trigger: 0, keep: 1 } }] })}]`),
        todo: network(`[${m("TodoListMiddleware")}]`, "[]"),
        summarization: network(`[${m("SummarizationMiddleware", { model: "gpt-4o-mini", trigger: ["messages", 3], keep: ["messages", 1] })}]`),
      },
      {},
      path.join(projectRoot, "test/fixtures/middleware/coded_tools"),
    );
  });
  afterAll(() => networks.close());
  beforeEach(() => networks.llm.reset());

  const frontRequests = () => networks.llm.requests.filter((recorded) => toFront(recorded.request)).map((recorded) => recorded.request);

  it("ModelCallLimitMiddleware ends the run at its limit with a message saying which", async () => {
    const chat = await networks.chat("model_limit", "help");
    expect(frontRequests()).toHaveLength(1);
    expect(chat.answer).toBe("Model call limits exceeded: run limit (1/1)");
  });

  it("ModelCallLimitMiddleware with exit_behavior error fails the run, naming the middleware", async () => {
    await expect(networks.chat("model_limit_error", "help")).rejects.toThrow(
      "the middleware ModelCallLimitMiddleware failed in before_model: ModelCallLimitExceededError: Model call limits exceeded: run limit (1/1)",
    );
  });

  it("ToolCallLimitMiddleware runs the calls within the limit and tells the model about the others", async () => {
    networks.llm.script((request) => {
      if (toFront(request) && request.messages.at(-1)!.role === "user") return { toolCalls: [{ name: "Helper", arguments: { q: "a" } }, { name: "Helper", arguments: { q: "b" } }] };
      if (toFront(request)) return { text: request.messages.filter((message) => message.role === "tool").map((message) => message.content).join(" | ") };
      return { text: `helped with ${request.messages.at(-1)!.content}` };
    });
    const chat = await networks.chat("tool_limit", "help");
    expect(networks.llm.requests.filter((recorded) => recorded.request.system === "Helper.")).toHaveLength(1);
    // The refused call's result is in the conversation first: the middleware answered it before any tool ran.
    expect(chat.answer).toMatch(/^The 'Helper' tool call limit reached: run limit \(1 calls\)\. .* \| helped with The q is a\.$/);
  });

  it("ToolCallLimitMiddleware with exit_behavior end ends the run when the limited tool is called past it", async () => {
    networks.llm.script((request) =>
      toFront(request) ? { toolCalls: [{ name: "Helper", arguments: { q: "again" } }] } : { text: "helped" },
    );
    const chat = await networks.chat("tool_limit_end", "help");
    expect(frontRequests()).toHaveLength(2);
    expect(chat.answer).toMatch(/^The 'Helper' tool call limit reached: run limit \(1 calls\)\./);
  });

  it("ModelFallbackMiddleware sends the failed request to first_model", async () => {
    networks.llm.failNext(400);
    networks.llm.script(() => ({ text: "from the fallback" }));
    const chat = await networks.chat("fallback", "help");
    expect(networks.llm.requests.map((recorded) => recorded.body["model"])).toEqual(["gpt-4o-mini", "gpt-4o"]);
    expect(chat.answer).toBe("from the fallback");
  });

  it("ModelRetryMiddleware tries a failed model call again, then answers with the failure", async () => {
    networks.llm.failNext(400, 2);
    networks.llm.script(() => ({ text: "third time lucky" }));
    expect((await networks.chat("model_retry", "help")).answer).toBe("third time lucky");
    expect(networks.llm.requests).toHaveLength(3);
    networks.llm.reset();
    networks.llm.failNext(400, 3);
    expect((await networks.chat("model_retry", "help")).answer).toMatch(/^The model call failed after 3 attempt\(s\) with AxonError: the LLM did not answer/);
  });

  it("ToolRetryMiddleware runs a failed tool again; on_failure raise fails the run once retries are spent", async () => {
    networks.llm.script((request) =>
      request.messages.at(-1)!.role === "user" ? { toolCalls: [{ name: "Flaky", arguments: { failures: 2 } }] } : { text: `result: ${request.messages.at(-1)!.content}` },
    );
    expect((await networks.chat("tool_retry", "go")).answer).toBe("result: worked on call 3");
    await expect(networks.chat("tool_retry_raise", "go")).rejects.toThrow("flaky failure 2");
  });

  it("LLMToolSelectorMiddleware offers the model the tools a selecting call chose, and always_include", async () => {
    networks.llm.script((request) => {
      if (request.tools.some((tool) => tool.name === "select_tools")) return { toolCalls: [{ name: "select_tools", arguments: { tools: ["Other", "Helper"] } }] };
      return { text: `offered ${request.tools.map((tool) => tool.name).join(", ")}` };
    });
    expect((await networks.chat("selector", "do other things")).answer).toBe("offered Other, Flaky");
    const selecting = networks.llm.requests[0]!.request;
    expect(selecting.messages).toEqual([{ role: "user", content: "do other things" }]);
    expect(selecting.system).toContain("- Helper: Helps.");
  });

  it("ContextEditingMiddleware clears older tool results from what the model is sent", async () => {
    networks.llm.script((request) => {
      if (!toFront(request)) return { text: "a long result" };
      const results = request.messages.filter((message) => message.role === "tool").length;
      return results < 2 ? { toolCalls: [{ name: "Helper", arguments: { q: `round ${results}` } }] } : { text: request.messages.filter((message) => message.role === "tool").map((message) => message.content).join(" | ") };
    });
    expect((await networks.chat("context_editing", "go")).answer).toBe("[cleared] | a long result");
  });

  it("TodoListMiddleware offers write_todos and says how to use it in the system prompt", async () => {
    networks.llm.script((request) =>
      request.messages.at(-1)!.role === "user"
        ? { toolCalls: [{ name: "write_todos", arguments: { todos: [{ content: "plan", status: "in_progress" }] } }] }
        : { text: request.messages.at(-1)!.content },
    );
    const chat = await networks.chat("todo", "a big task");
    expect(frontRequests()[0]!.tools.map((tool) => tool.name)).toEqual(["write_todos"]);
    expect(frontRequests()[0]!.system).toMatch(/^Front\.\n\n## write_todos\n/);
    expect(chat.answer).toBe('Updated todo list to [{"content":"plan","status":"in_progress"}]');
  });

  it("SummarizationMiddleware replaces the older messages by a summary once the trigger is reached", async () => {
    networks.llm.script((request) => {
      if (request.messages[0]?.content.startsWith("Summarize")) return { text: "the user asked for help" };
      if (!toFront(request)) return { text: "helped" };
      return request.messages.at(-1)!.role === "user" ? { toolCalls: [{ name: "Helper", arguments: { q: "x" } }] } : { text: "done" };
    });
    expect((await networks.chat("summarization", "please help")).answer).toBe("done");
    const summarizing = networks.llm.requests.find((recorded) => recorded.request.messages[0]?.content.startsWith("Summarize"))!.request;
    expect(summarizing.messages[0]!.content).toContain("user: please help");
    const last = frontRequests().at(-1)!;
    expect(last.messages[0]).toEqual({ role: "user", content: "Here is a summary of the conversation to date:\n\nthe user asked for help" });
    expect(last.messages.map((message) => message.role)).toEqual(["user", "assistant", "tool"]);
  });
});
