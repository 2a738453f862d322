import { mkdtempSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { ScriptedRequest } from "../../support/scripted-llm/scripted-llm.js";
import { projectRoot } from "../../support/server.js";
import { MiddlewareNetworks } from "./harness.js";

const importRoot = path.join(projectRoot, "test/fixtures/middleware/python");
const memoryFile = path.join(mkdtempSync(path.join(os.tmpdir(), "axon-memory-")), "memory.json");

/** A front man (instructions "Front.") with the given middleware, a helper agent as its tool, its sly_data sent back. */
function network(middleware: object[]): string {
  return JSON.stringify({
    llm_config: { model_name: "gpt-4o-mini" },
    tools: [
      {
        name: "Front",
        function: { description: "Answers." },
        instructions: "Front.",
        tools: ["Helper"],
        middleware,
        allow: { to_upstream: { sly_data: true } },
      },
      { name: "Helper", function: { description: "Helps.", parameters: { type: "object", properties: { q: { type: "string" } } } }, instructions: "Helper." },
    ],
  });
}

const toFront = (request: ScriptedRequest) => request.system?.startsWith("Front.") === true;

/** The front man calls `tool` with `args` on the user's message, then answers with the tool's result. */
function callingOnce(tool: string, args: object) {
  return (request: ScriptedRequest) => {
    if (!toFront(request)) return { text: `helped with ${request.messages.at(-1)!.content}` };
    const last = request.messages.at(-1)!;
    return last.role === "user" ? { toolCalls: [{ name: tool, arguments: args as never }] } : { text: `result: ${last.content}` };
  };
}

describe("a network's own middleware, run in the Python worker with LangChain's types", () => {
  let networks: MiddlewareNetworks;
  beforeAll(async () => {
    networks = await MiddlewareNetworks.start(
      {
        order: network([
          { class: "middleware.testing.Recorder", args: { label: "a", sly_data: null } },
          { class: "middleware.testing.Recorder", args: { label: "b", sly_data: null } },
        ]),
        checklist: network([{ class: "middleware.checklist.ChecklistMiddleware", args: { checklist_title: "Steps", initial_checklist: [{ item: "plan" }, { item: "do" }] } }]),
        skills: network([{ class: "middleware.skills.SkillsMiddleware", args: { skills_dir: path.join(importRoot, "skills"), origin_str: null } }]),
        memory: network([{ class: "middleware.memory.MemoryMiddleware", args: { memory_file: memoryFile, sly_data: null, progress_reporter: null } }]),
        rewriter: network([{ class: "middleware.testing.Rewriter" }]),
        tool_shaper: network([{ class: "middleware.testing.ToolShaper" }]),
        raising: network([{ class: "middleware.testing.Raising" }]),
        unmakeable: network([{ class: "middleware.testing.Unmakeable" }]),
        ender: network([{ class: "middleware.testing.Ender" }]),
        history: network([{ class: "middleware.testing.HistoryTeller", args: { chat_history: null, sly_data: null } }]),
        reviewer: network([{ class: "middleware.testing.Reviewer", args: { reservationist: true, sly_data: true } }]),
        reserving_reviewer: network([{ class: "middleware.testing.Reviewer", allow: { reservations: true }, args: { reservationist: true, sly_data: true } }]),
        mixed: network([
          { class: "langchain.agents.middleware.PIIMiddleware", args: { pii_type: "email", strategy: "redact" } },
          { class: "middleware.testing.Rewriter" },
        ]),
      },
      {},
      path.join(importRoot, "coded_tools"),
    );
  });
  afterAll(() => networks.close());
  beforeEach(() => networks.llm.reset());

  const frontRequests = () => networks.llm.requests.filter((recorded) => toFront(recorded.request)).map((recorded) => recorded.request);

  it("calls the hooks in LangChain's order: before in list order, after in reverse, wraps nested with the first outermost", async () => {
    networks.llm.script(callingOnce("Helper", { q: "x" }));
    const chat = await networks.chat("order", "go");
    const hooks = chat.messages.at(-1)!.slyData!["hooks"];
    expect(hooks).toEqual([
      "a.before_agent",
      "b.before_agent",
      "a.before_model",
      "b.before_model",
      "a.wrap_model_call",
      "b.wrap_model_call",
      "b.after_model",
      "a.after_model",
      "a.wrap_tool_call",
      "b.wrap_tool_call",
      "a.before_model",
      "b.before_model",
      "a.wrap_model_call",
      "b.wrap_model_call",
      "b.after_model",
      "a.after_model",
      "b.after_agent",
      "a.after_agent",
    ]);
  });

  it("checklist: the checklist reaches the system prompt, and the model checks items off with the middleware's tool", async () => {
    networks.llm.script((request) => (request.messages.at(-1)!.role === "user" ? { toolCalls: [{ name: "check_item", arguments: { number: 1 } }] } : { text: "checked" }));
    await networks.chat("checklist", "go");
    const [first, second] = frontRequests();
    expect(first!.system).toBe("Front.\n\n## Steps\n1. [ ] plan\n2. [ ] do");
    expect(first!.tools.map((tool) => tool.name)).toEqual(["Helper", "check_item"]);
    expect(second!.messages.at(-1)).toMatchObject({ role: "tool", content: "item 1 done" });
    expect(second!.system).toBe("Front.\n\n## Steps\n1. [x] plan\n2. [ ] do");
  });

  it("skills: the index in the prompt (its origin_str filled in), a skill's whole text only once loaded", async () => {
    networks.llm.script((request) => (request.messages.at(-1)!.role === "user" ? { toolCalls: [{ name: "load_skill", arguments: { name: "tides" } }] } : { text: request.messages.at(-1)!.content }));
    const chat = await networks.chat("skills", "when is high tide?");
    expect(frontRequests()[0]!.system).toBe("Front.\n\nSkills of Front:\n- tides: Tells the tides.\n- weather: Forecasts the weather.");
    expect(frontRequests()[0]!.system).not.toContain("High tide is at noon.");
    expect(chat.answer).toBe("High tide is at noon.");
  });

  it("memory: remembered across chats, told through sly_data and the progress reporter", async () => {
    networks.llm.script((request) => (request.messages.at(-1)!.role === "user" ? { toolCalls: [{ name: "remember", arguments: { fact: "Ada likes tea" } }] } : { text: "noted" }));
    const first = await networks.chat("memory", "remember that Ada likes tea");
    expect(first.messages.at(-1)!.slyData).toEqual({ facts_remembered: 1 });
    expect(first.messages.find((message) => message.structure?.["memory"] === "saved")?.structure).toEqual({ memory: "saved", facts: 1 });
    expect(JSON.parse(readFileSync(memoryFile, "utf8"))).toEqual(["Ada likes tea"]);
    networks.llm.reset();
    networks.llm.script(() => ({ text: "you like tea" }));
    await networks.chat("memory", "what do I like?");
    expect(frontRequests()[0]!.system).toBe("Front.\n\nYou remember:\n- Ada likes tea");
  });

  it("replaces a message by its id, adds and removes them as LangChain's add_messages does, in the stream and the answer", async () => {
    networks.llm.script(() => ({ text: "hello" }));
    const chat = await networks.chat("rewriter", "hi");
    expect(frontRequests()[0]!.messages).toEqual([
      { role: "user", content: "[checked] hi" },
      { role: "user", content: "a note" },
    ]);
    expect(chat.answer).toBe("hello (signed)");
    expect(chat.of("Front").map(({ type, text }) => `${type}: ${text}`)).toEqual(["SYSTEM: Front.", "HUMAN: a note", "AI: hello (signed)", "AGENT: "]);
  });

  it("a tool wrap changes the call the tool gets and the result the model gets", async () => {
    networks.llm.script(callingOnce("Helper", { q: "quiet" }));
    const chat = await networks.chat("tool_shaper", "go");
    expect(networks.llm.requests.find((recorded) => recorded.request.system === "Helper.")!.request.messages.at(-1)!.content).toBe("The q is QUIET.");
    expect(chat.answer).toBe("result: <<helped with The q is QUIET.>>");
  });

  it("a middleware that raises fails its agent's run with an error naming the class; the server goes on", async () => {
    await expect(networks.chat("raising", "go")).rejects.toThrow("the middleware Raising failed in before_model: ValueError: this middleware refuses");
    networks.llm.script(() => ({ text: "still here" }));
    expect((await networks.chat("rewriter", "again")).answer).toBe("still here (signed)");
  });

  it("a middleware that cannot be made fails its agent's run with an error naming the class and what it lacks", async () => {
    await expect(networks.chat("unmakeable", "go")).rejects.toThrow(
      /^the middleware Unmakeable failed in __init__: ModuleNotFoundError: No module named 'axon_test_absent_package' \(Python .*: install the package there/,
    );
  });

  it("a before_model hook that jumps to the end ends the run with its answer, no model called", async () => {
    expect((await networks.chat("ender", "go")).answer).toBe("ended early");
    expect(frontRequests()).toEqual([]);
  });

  it("fills chat_history with the agent's conversation as LangChain messages", async () => {
    networks.llm.script(() => ({ text: "ok" }));
    const chat = await networks.chat("history", "hello there");
    expect(chat.messages.at(-1)!.slyData!["history"]).toEqual(["HumanMessage: hello there"]);
  });

  it("an after_agent hook sends a finished run back to the model with what to fix; the after_agent hooks run again once it ends", async () => {
    networks.llm.script((request) => ({ text: request.messages.at(-1)!.content === "Please sign your answer." ? "Done. -- Front" : "Done." }));
    const chat = await networks.chat("reviewer", "go");
    expect(frontRequests().map((request) => request.messages.map(({ role, content }) => `${role}: ${content}`))).toEqual([
      ["user: go"],
      ["user: go", "assistant: Done.", "user: Please sign your answer."],
    ]);
    expect(chat.answer).toBe("Done. -- Front");
    // Written true (as the studio writes its special args) but not allowed reservations: the class gets None.
    expect(chat.messages.at(-1)!.slyData).toEqual({ reviewed: true, had_reservationist: false });
  });

  it("gives the reservationist special arg where the entry's allow.reservations says so", async () => {
    networks.llm.script(() => ({ text: "Done." }));
    expect((await networks.chat("reserving_reviewer", "go")).messages.at(-1)!.slyData).toEqual({ reviewed: true, had_reservationist: true });
  });

  it("runs beside Axon's own prebuilt middleware in one chain, in list order", async () => {
    networks.llm.script(() => ({ text: "ok" }));
    await networks.chat("mixed", "mail me at ann@example.org");
    expect(frontRequests()[0]!.messages[0]).toEqual({ role: "user", content: "[checked] mail me at [REDACTED_EMAIL]" });
  });
});

describe("a network's own middleware where the interpreter lacks LangChain", () => {
  it("refuses the network at load, naming the middleware, the missing package and the fix", async () => {
    const { NetworkFolder } = await import("../fixture.js");
    const { AgentRegistry } = await import("../../../src/agents/registry.js");
    const folder = await NetworkFolder.create({
      "manifest.hocon": `{ "plain.hocon": true, "wrong.hocon": true }`,
      "plain.hocon": network([{ class: "middleware.plain.Plain" }]),
      "wrong.hocon": network([{ class: "langchain.agents.middleware.PIIMiddleware", args: { pii_type: "email", stratgy: "mask" } }]),
    });
    const registry = await AgentRegistry.load({
      manifestFile: folder.path("manifest.hocon"),
      projectRoot: folder.root,
      toolPath: path.join(projectRoot, "test/fixtures/middleware/no-langchain/coded_tools"),
      python: "python3",
    });
    expect(registry.get("plain")).toBeUndefined();
    // A class Axon runs is checked whatever the interpreter: an argument it does not take refuses the network.
    expect(registry.get("wrong")).toBeUndefined();
    expect(registry.problems).toContainEqual(expect.objectContaining({ key: "tools[0].middleware[0].args.stratgy", reason: expect.stringMatching(/^is not an argument of PIIMiddleware/) }));
    expect(registry.problems).toContainEqual({
      file: folder.path("plain.hocon"),
      key: "tools[0].middleware[0].class",
      reason: expect.stringMatching(
        /^network plain is not served: its middleware middleware\.plain\.Plain runs in Python, which lacks LangChain \(the langchain package\), which its AgentMiddleware classes need: No module named langchain .*install it into the interpreter AXON_PYTHON names/,
      ),
    });
    registry.close();
    await folder.remove();
  });
});
