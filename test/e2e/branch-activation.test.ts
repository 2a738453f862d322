import path from "node:path";
import type { JsonObject } from "@bufbuild/protobuf";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startAxonProcess, type AxonProcess } from "../support/axon-process.js";
import { finalOf, maximal, messagesOf, restChat, type Json } from "../support/chat-protocols.js";
import { defaultReply, ScriptedLlm, type ScriptHandler } from "../support/scripted-llm/scripted-llm.js";
import { projectRoot } from "../support/server.js";
import { until } from "../support/wait.js";

const fixtures = path.join(projectRoot, "test/fixtures/branch-activation");

/** The front man calls the tool the user's message starts with, with the JSON after it; every other agent answers. */
const frontManCallsTheNamedTool: ScriptHandler = (request) => {
  const last = request.messages.at(-1);
  if (request.system !== "Call the tool the user names." || last?.role !== "user") return defaultReply(request);
  const [name, ...json] = last.content.split(" ");
  return { toolCalls: [{ name: name!, arguments: JSON.parse(json.join(" ") || "{}") as JsonObject }] };
};

const toolResults = (lines: Json[]) => messagesOf(lines).filter((message) => message.type === "AGENT_TOOL_RESULT");

/**
 * Coded tools that call the tools of their network, as neuro-san-studio's do: a Python BranchActivation's
 * `use_tool`, with neuro-san installed (here a package shaped like neuro-san's, whose own constructor needs its server)
 * and with Axon's stand-in; and a TypeScript tool's `context.useTool`.
 */
describe.each([
  ["Axon's stand-in for neuro-san", "stand-in", {}],
  ["neuro-san installed", "installed", { PYTHONPATH: path.join(fixtures, "neuro-san") }],
])("coded tools calling tools, with %s", (_name, neuroSan, pythonEnv) => {
  let llm: ScriptedLlm;
  let axon: AxonProcess;
  const chat = (text: string) => restChat(axon, "caller", { user_message: { text }, chat_filter: maximal });

  beforeAll(async () => {
    llm = await ScriptedLlm.start("openai");
    axon = await startAxonProcess({
      ...llm.env,
      ...pythonEnv,
      AGENT_MANIFEST_FILE: path.join(fixtures, "registries/manifest.hocon"),
      AGENT_TOOL_PATH: path.join(fixtures, "coded_tools"),
      AXON_PYTHON_WORKERS: "1",
      LOG_LEVEL: "debug",
    });
  });
  afterAll(async () => {
    await axon?.stop();
    await llm?.close();
  });
  beforeEach(() => {
    llm.reset();
    llm.script(frontManCallsTheNamedTool);
  });

  it("a Python BranchActivation made with neuro-san's five arguments calls an LLM agent, under its own origin", async () => {
    const lines = await chat('Delegator {"call": "Expert", "with": {"inquiry": "tides"}}');
    const results = toolResults(lines);
    expect(results.map((result) => result.text)).toEqual(["Answer: The inquiry is tides.", "Expert answered Front.Delegator: Answer: The inquiry is tides."]);
    // The Expert ran as if the Delegator's LLM had called it: announced, under [Front, Delegator, Expert], reported.
    const invoked = messagesOf(lines).find((message) => message.structure?.invoked_agent_name === "Expert");
    expect(invoked).toMatchObject({ type: "AGENT", origin: [{ tool: "Front" }, { tool: "Delegator" }], structure: { params: { inquiry: "tides" } } });
    expect(results[0].tool_result_origin.map((step: Json) => step.tool)).toEqual(["Front", "Delegator", "Expert"]);
    const expert = messagesOf(lines).filter((message) => message.origin?.at(-1)?.tool === "Expert").map((message) => message.type);
    expect(expert).toEqual(["SYSTEM", "HUMAN", "AI"]);
    expect(llm.requests.map((request) => request.request.system)).toEqual(["Call the tool the user names.", "Answer as an expert.", "Call the tool the user names."]);
    // Log lines go out in batches, up to 10 ms after they are written: the chat's answer may come first.
    expect(await until(() => axon.logs.find((line) => line.msg === "python worker ready"), "the python worker's ready line")).toMatchObject({ neuroSan });
  });

  it("calls a coded tool, whose sly_data reaches the caller's and the client", async () => {
    const lines = await chat('Delegator {"call": "Adder", "with": {"a": 2, "b": 3}}');
    expect(toolResults(lines).map((result) => result.text)).toEqual(["5", "Adder answered Front.Delegator: 5"]);
    expect(finalOf(lines).sly_data).toEqual({ visitor: "Ada", total: 5 });
  });

  it("calls another network, with its sly_data policies", async () => {
    const lines = await chat('Delegator {"call": "/helper", "with": {"inquiry": "hi"}}');
    expect(toolResults(lines).at(-1).text).toBe("/helper answered Front.Delegator: Answer: Hello Ada");
    // to_downstream let `visitor` go to /helper; from_downstream let `greeted` back.
    expect(finalOf(lines).sly_data).toEqual({ visitor: "Ada", greeted: "Ada" });
  });

  it("a chain of calls is bounded as any is: past max_steps (max_iterations, as the network writes it) the call fails, and the caller says why", async () => {
    const deeper = (levels: number): Json => (levels === 0 ? { call: "Delegator" } : { call: "Delegator", with: deeper(levels - 1) });
    const lines = await chat(`Delegator ${JSON.stringify(deeper(5))}`);
    expect(toolResults(lines).at(-1).text).toMatch(/^Error: Delegator failed: .*deeper than max_steps \(4\)/);
  });

  it("a name the network does not have is an error the caller gets", async () => {
    const lines = await chat('Delegator {"call": "Nobody"}');
    expect(toolResults(lines).at(-1).text).toMatch(/^Error: Delegator failed: .*network caller has no tool named Nobody/);
  });

  it("a TypeScript coded tool calls the same way through its context", async () => {
    const lines = await chat('TsDelegator {"call": "Adder", "with": {"a": 4, "b": 5}}');
    expect(toolResults(lines).map((result) => result.text)).toEqual(["9", "Adder answered: 9 (total 9)"]);
    expect(toolResults(lines)[0].tool_result_origin.map((step: Json) => step.tool)).toEqual(["Front", "TsDelegator", "Adder"]);
  });

  it("a tool whose spec allows reservations deploys a network with its reservationist, and chats with it by its reservation", async () => {
    const lines = await chat('Designer {"topic": "the sea", "lifetime": 600}');
    const result: string = toolResults(lines).at(-1).text;
    const [, name, until] = /^(designed-[0-9a-f]{8}-[0-9a-f-]{27}) until (\d+): Answer: .*the sea/s.exec(result) ?? [];
    expect(name, result).toBeDefined();
    expect(Number(until) * 1000).toBeGreaterThan(Date.now());
    expect(finalOf(lines).sly_data).toMatchObject({ designed: name });
    // Served on the neuro-san API under its reserved name, private: callable, not listed.
    expect(await (await fetch(`${axon.url}/api/v1/${name}/function`)).json()).toEqual({ function: { description: "Writes." } });
    const listed = (await (await fetch(`${axon.url}/api/v1/list`)).json()) as { agents: { agent_name: string }[] };
    expect(listed.agents.map((agent) => agent.agent_name)).not.toContain(name);
  });

  it("a tool whose spec does not allow reservations gets no reservationist", async () => {
    const lines = await chat('Undesigner {"topic": "the sea"}');
    expect(toolResults(lines).at(-1).text).toBe("no reservationist");
  });
});
