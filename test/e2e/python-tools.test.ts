import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { JsonObject } from "@bufbuild/protobuf";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startAxonProcess, type AxonProcess } from "../support/axon-process.js";
import { finalOf, maximal, messagesOf, restChat, type Json } from "../support/chat-protocols.js";
import { defaultReply, ScriptedLlm, type ScriptHandler } from "../support/scripted-llm/scripted-llm.js";
import { runNetworkTests } from "../../src/network-tests/runner.js";
import { alice, operationsApi, roomyAdmission, writeFiles } from "../support/operations.js";
import { projectRoot } from "../support/server.js";
import { until } from "../support/wait.js";

/**
 * The user's message is the plan: `Opener then User {"x": 1}` calls Opener, then User with those arguments, one
 * round each, then answers with the last results.
 */
const followThePlan: ScriptHandler = (request) => {
  const plan = (request.messages.find((message) => message.role === "user")?.content ?? "").split(" then ").map((step) => {
    const [name, ...json] = step.split(" ");
    return { name: name!, arguments: json.length > 0 ? (JSON.parse(json.join(" ")) as JsonObject) : {} };
  });
  const rounds = request.messages.filter((message) => message.role === "assistant" && (message.toolCalls?.length ?? 0) > 0).length;
  return rounds < plan.length ? { toolCalls: [plan[rounds]!] } : defaultReply(request);
};

const toolResultsOf = (lines: Json[]) => messagesOf(lines).filter((message) => message.type === "AGENT_TOOL_RESULT").map((message) => message.text);
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return readFileSync(`/proc/${pid}/stat`, "utf8").split(" ")[2] !== "Z";
  } catch {
    return false;
  }
};

/** neuro-san's Python coded tools, run unchanged by the built server (`npm start`), in its Python workers. */
describe("Python coded tools in the built server", () => {
  let llm: ScriptedLlm;
  let axon: AxonProcess;
  let markers: string;
  const chat = (text: string, body: Json = {}) => restChat(axon, "python_tools", { user_message: { text }, chat_filter: maximal, ...body });

  beforeAll(async () => {
    llm = await ScriptedLlm.start("openai");
    markers = mkdtempSync(path.join(os.tmpdir(), "python-markers-"));
    axon = await startAxonProcess({
      ...llm.env,
      AGENT_MANIFEST_FILE: "test/fixtures/python/registries/manifest.hocon",
      AGENT_TOOL_PATH: "test/fixtures/python/coded_tools",
      AXON_PYTHON_WORKERS: "1",
      AXON_PYTHON_CANCEL_GRACE_SECONDS: "1",
      PYTHON_MARKERS: markers,
      ...writeFiles("http://127.0.0.1:9", roomyAdmission),
    });
  });
  afterAll(async () => {
    await axon?.stop();
    await llm.close();
  });
  beforeEach(() => {
    llm.reset();
    llm.script(followThePlan);
  });

  it("reports a tool that does not compile when the network loads, naming the file and the line", () => {
    const warning = axon.logs.find((line) => line.key === "tools[9].class");
    expect(warning).toMatchObject({ msg: "agent network warning", severity: "warning" });
    expect(warning!.reason).toMatch(/^broken\.Broken cannot load: SyntaxError: .* \(.*test\/fixtures\/python\/coded_tools\/python_tools\/broken\.py:5\); calls of Broken will fail$/);
  });

  it("shows its Python tools in Connectivity as neuro-san does, as coded_tool", async () => {
    const connectivity = (await (await fetch(`${axon.url}/api/v1/python_tools/connectivity`)).json()) as Json;
    const adder = connectivity.connectivity_info.find((info: Json) => info.origin === "Adder");
    expect(adder).toEqual({ origin: "Adder", tools: [], display_as: "coded_tool" });
  });

  it("runs a synchronous tool: its result as neuro-san renders it, its sly_data through to_upstream, tool_start and tool_end under MAXIMAL", async () => {
    const lines = await chat('Adder {"x": 2, "y": 3}', { sly_data: { calls: 1 } });
    expect(toolResultsOf(lines)).toEqual(["{'total': 5}"]);
    const notes = messagesOf(lines).filter((message) => message.type === "AGENT" && message.origin?.at(-1)?.tool === "Adder");
    expect(notes.map((note) => note.structure)).toEqual([
      { tool_start: true, tool_args: { x: 2, y: 3 } },
      { tool_end: true, tool_output: "{'total': 5}" },
    ]);
    expect(finalOf(lines)).toMatchObject({ type: "AGENT_FRAMEWORK", text: "Answer: {'total': 5}", sly_data: { calls: 2, last_total: 5 } });
  });

  it("streams a tool's progress and gives it origin_str", async () => {
    const lines = await chat("Progress then Echo");
    expect(messagesOf(lines).filter((message) => message.type === "AGENT_PROGRESS").map((message) => message.structure)).toContainEqual({ step: "halfway" });
    expect(toolResultsOf(lines)).toEqual(["reported", "Front.Echo said "]);
  });

  it("keeps values JSON cannot carry in the worker for the chat's later tools, away from the client, and closes them when the chat ends", async () => {
    const lines = await chat("Opener then User");
    expect(toolResultsOf(lines)).toEqual(["opened", "connection is Connection"]);
    const final = finalOf(lines);
    expect(final.sly_data).toEqual({ opened: true, worker_pid: expect.any(Number) });
    expect(JSON.stringify(lines)).not.toContain("Connection object");
    await until(() => existsSync(path.join(markers, "connection")), "the connection closed");
    // A later chat starts without it.
    expect(toolResultsOf(await chat("User"))).toEqual(["connection is NoneType"]);
  });

  it("makes an exception a tool error naming the tool, the type and the message; the traceback goes only to the log", async () => {
    const lines = await chat("Raiser");
    expect(toolResultsOf(lines)).toEqual(["Error: Raiser failed: ValueError: the input was bad"]);
    expect(JSON.stringify(lines)).not.toContain("Traceback");
    expect(finalOf(lines)).toMatchObject({ type: "AGENT_FRAMEWORK", sly_data: { written_before_raising: true } });
    const logged = await until(() => axon.logs.find((line) => line.msg === "tool failed" && line.tool === "Raiser"), "the failure logged");
    expect((logged.err as Json).traceback).toContain('raise ValueError("the input was bad")');
  });

  it("fails only the call of a worker its tool killed; the next chat gets a fresh worker", async () => {
    const lines = await chat("Killer");
    expect(toolResultsOf(lines)).toEqual(["Error: Killer failed: the Python worker exited (code 3) before the tool answered"]);
    expect(finalOf(lines).type).toBe("AGENT_FRAMEWORK");
    expect(toolResultsOf(await chat('Adder {"x": 1, "y": 1}'))).toEqual(["{'total': 2}"]);
  });

  it("cancels the tool's asyncio task when the client goes away", async () => {
    const client = new AbortController();
    const response = await fetch(`${axon.url}/api/v1/python_tools/streaming_chat`, {
      method: "POST",
      body: JSON.stringify({ user_message: { text: "Sleeper" }, chat_filter: maximal }),
      signal: client.signal,
    });
    const reader = response.body!.getReader();
    let received = "";
    while (!received.includes('"sleeping"')) received += new TextDecoder().decode((await reader.read()).value);
    client.abort();
    await until(() => existsSync(path.join(markers, "sleeper")) && readFileSync(path.join(markers, "sleeper"), "utf8"), "CancelledError in the tool");
  });

  it("runs them in agent.chat operations as in StreamingChat", async () => {
    const api = operationsApi(axon.url);
    const submitted = await api.post(alice, {
      idempotency_key: "python-adder",
      operation: "agent.chat",
      target: { network: "python_tools" },
      arguments: { text: 'Adder {"x": 4, "y": 5}', sly_data: { calls: 0 } },
      reason: "a Python tool in an operation",
    });
    expect(submitted.status).toBe(202);
    expect(await api.waitTerminal(alice, submitted.body.id)).toMatchObject({
      state: "succeeded",
      result: { text: "Answer: {'total': 9}", sly_data: { calls: 1, last_total: 9 } },
    });
  });

  it("passes the network test runner's cases (npm run test:networks)", async () => {
    const report = await runNetworkTests([path.join(projectRoot, "test/fixtures/python/network-tests/adder.hocon")], { url: axon.url });
    expect(report.totals).toMatchObject({ cases: 1, passedCases: 1, assertions: { failed: 0 } });
  });

  it("ends its Python workers when the server stops", async () => {
    const pid = finalOf(await chat("Opener")).sly_data.worker_pid as number;
    expect(alive(pid)).toBe(true);
    expect(await axon.stop()).toBe(0);
    await until(() => !alive(pid), "the worker gone");
  });
});

/** The built server on a checkout of a user's own, written from `files` (its manifest at registries/manifest.hocon). */
async function serveCheckout(files: Record<string, string>, env: Record<string, string>): Promise<AxonProcess> {
  const checkout = mkdtempSync(path.join(os.tmpdir(), "user-checkout-"));
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(checkout, file)), { recursive: true });
    writeFileSync(path.join(checkout, file), text);
  }
  return startAxonProcess({
    AGENT_MANIFEST_FILE: path.join(checkout, "registries/manifest.hocon"),
    AGENT_TOOL_PATH: path.join(checkout, "coded_tools"),
    AXON_PYTHON_WORKERS: "1",
    ...env,
  });
}

/** A checkout of a user's own, outside Axon's tree and without package.json: tools found where neuro-san finds them. */
describe("coded tools wherever a user puts them, in the built server", () => {
  let llm: ScriptedLlm;
  let axon: AxonProcess;
  const files: Record<string, string> = {
    "registries/manifest.hocon": `{ "basic/music_nerd_pro.hocon": true, "my_net.hocon": true }`,
    "registries/basic/music_nerd_pro.hocon": `{
      llm_config { model_name: "gpt-4o-mini" }
      toolbox_info_file: "toolbox/toolbox_info.hocon"
      tools: [
        { name: "MusicNerdPro", instructions: "Count the cost.", tools: ["Accountant", "Ledger"] }
        { name: "Accountant", class: "accountant.Accountant", function { description: "Adds to the running cost" } }
        { name: "Ledger", toolbox: "ledger" }
      ]
    }`,
    "registries/my_net.hocon": `{
      llm_config { model_name: "gpt-4o-mini" }
      tools: [
        { name: "Front", instructions: "Use the tool.", tools: ["Tool"] }
        { name: "Tool", class: "tool.Tool", function { description: "A TypeScript tool" } }
      ]
    }`,
    "toolbox/toolbox_info.hocon": `{ ledger: { class: "neuro_san_studio.coded_tools.utils.ledger.Ledger", description: "Writes the ledger" } }`,
    // neuro-san-studio keeps shared tools one folder up from the network's: coded_tools/basic/, not basic/music_nerd_pro/.
    "coded_tools/basic/accountant.py": [
      "from neuro_san.interfaces.coded_tool import CodedTool",
      "class Accountant(CodedTool):",
      "    def invoke(self, args, sly_data):",
      "        return {'running_cost': args.get('running_cost', 0.0) + 3.0}",
    ].join("\n"),
    "neuro_san_studio/coded_tools/utils/ledger.py": [
      "from neuro_san.interfaces.coded_tool import CodedTool",
      "class Ledger(CodedTool):",
      "    async def async_invoke(self, args, sly_data):",
      "        return 'ledger written'",
    ].join("\n"),
    "coded_tools/my_net/tool.ts": [
      "import { twice } from './helper.ts';",
      "export class Tool {",
      "  invoke(args: Record<string, unknown>): string { return `typescript says ${twice(21)}`; }",
      "}",
    ].join("\n"),
    "coded_tools/my_net/helper.ts": "export const twice = (n: number): number => n * 2;",
  };

  beforeAll(async () => {
    llm = await ScriptedLlm.start("openai");
    axon = await serveCheckout(files, llm.env);
  });
  afterAll(async () => {
    await axon?.stop();
    await llm.close();
  });
  beforeEach(() => {
    llm.reset();
    llm.script(followThePlan);
  });

  it("loads every tool without a warning", () => {
    expect(axon.logs.filter((line) => line.msg === "agent network warning" || line.msg === "agent network problem")).toEqual([]);
  });

  it("runs a shared Python tool of a folder above the network's, and a toolbox class written neuro_san_studio.coded_tools...", async () => {
    const lines = await restChat(axon, "basic/music_nerd_pro", { user_message: { text: 'Accountant {"running_cost": 1.5} then Ledger' } });
    expect(finalOf(lines).text).toBe("Answer: ledger written");
    expect(llm.requests.at(-1)!.body["messages"]).toContainEqual(expect.objectContaining({ role: "tool", content: "{'running_cost': 4.5}" }));
  });

  it("runs a TypeScript tool of a folder without package.json", async () => {
    const lines = await restChat(axon, "my_net", { user_message: { text: "Tool" } });
    expect(finalOf(lines).text).toBe("Answer: typescript says 42");
  });
});

/**
 * Toolbox library tools whose class Axon does not implement, run in the built server's Python workers: a package shaped
 * as LangChain's (test/fixtures/python-packages/fakechain, not installed anywhere) on the interpreter's PYTHONPATH, as a
 * user would put an installed package there.
 */
describe("toolbox library tools run in Python, in the built server", () => {
  let llm: ScriptedLlm;
  let axon: AxonProcess;
  const files: Record<string, string> = {
    "registries/manifest.hocon": `{ "library.hocon": true }`,
    "registries/library.hocon": `{
      llm_config { model_name: "gpt-4o-mini" }
      toolbox_info_file: "toolbox/toolbox_info.hocon"
      tools: [
        { name: "Front", instructions: "Call the tool the user names.", tools: ["Shout", "Dictionary", "Grumpy", "Absent", "Custom"] }
        { name: "Shout", toolbox: "shout", args { times: 2 } }
        { name: "Dictionary", toolbox: "dictionary" }
        { name: "Grumpy", toolbox: "grumpy" }
        { name: "Absent", toolbox: "absent" }
        { name: "Custom", toolbox: "shout", function { description: "Shouts, as the network says", parameters { type: object, properties { text { type: string } } } } }
      ]
    }`,
    "toolbox/toolbox_info.hocon": `{
      shout { class: "fakechain.tools.Shout", args { prefix: "> ", times: 1 } }
      dictionary { class: "fakechain.tools.DictionaryToolkit", args { words { axon: "a nerve fibre" } } }
      grumpy { class: "fakechain.tools.Grumpy" }
      absent { class: "absent_chain.tools.Search" }
    }`,
  };
  const chat = async (text: string) => toolResultsOf(await restChat(axon, "library", { user_message: { text }, chat_filter: maximal }));

  beforeAll(async () => {
    llm = await ScriptedLlm.start("openai");
    axon = await serveCheckout(files, { ...llm.env, PYTHONPATH: path.join(projectRoot, "test/fixtures/python-packages") });
  });
  afterAll(async () => {
    await axon?.stop();
    await llm.close();
  });
  beforeEach(() => {
    llm.reset();
    llm.script(followThePlan);
  });

  it("warns at load about the one whose package the interpreter lacks, saying how to fix it", () => {
    const warnings = axon.logs.filter((line) => line.msg === "agent network warning");
    expect(warnings).toEqual([
      expect.objectContaining({
        key: "tools[4].toolbox",
        reason: expect.stringMatching(
          /^absent is the library tool absent_chain\.tools\.Search, which runs in Python and cannot be imported there: No module named absent_chain \(Python \S+\); install its package into the interpreter AXON_PYTHON names, or set AXON_PYTHON to one that has it; calls of Absent will fail$/,
        ),
      }),
    ]);
  });

  it("describes each tool to the LLM by its own name, description and schema, a toolkit as <agent>_<tool>, a function block first", async () => {
    await chat('Shout {"text": "hi"}');
    const offered = llm.requests[0]!.request.tools;
    expect(offered.map((tool) => tool.name)).toEqual(["Shout", "Dictionary_lookup", "Dictionary_count", "Grumpy", "Absent", "Custom"]);
    expect(offered[0]).toMatchObject({
      description: "Says the text back in capitals.",
      parameters: { type: "object", properties: { text: { type: "string", description: "What to shout." } }, required: ["text"] },
    });
    expect(offered[1]).toMatchObject({ description: "Looks a word up in the dictionary.", parameters: { properties: { word: { type: "string" } }, required: ["word"] } });
    expect(offered[5]).toMatchObject({ description: "Shouts, as the network says", parameters: { type: "object", properties: { text: { type: "string" } } } });
  });

  it("makes the class with the entry's args under the agent's, calls it with the LLM's arguments, and returns its output to the chat", async () => {
    // Not a string: JSON, as LangChain writes a tool's output into the tool message.
    const shouted = '{"shouted": "> HI HI", "made_with": {"prefix": "> ", "times": 2}}';
    expect(await chat('Shout {"text": "hi"}')).toEqual([shouted]);
    expect(llm.requests.at(-1)!.body["messages"]).toContainEqual(expect.objectContaining({ role: "tool", content: shouted }));
    expect(await chat('Custom {"text": "yo"}')).toEqual(['{"shouted": "> YO", "made_with": {"prefix": "> ", "times": 1}}']);
  });

  it("calls a toolkit's tools by the names it offered them under", async () => {
    expect(await chat('Dictionary_lookup {"word": "axon"} then Dictionary_count')).toEqual(["a nerve fibre", "1"]);
  });

  it("makes an exception a tool error naming the tool, the type and the message, as a coded tool's", async () => {
    expect(await chat("Grumpy")).toEqual(["Error: Grumpy failed: RuntimeError: the service said no"]);
  });

  it("fails the calls of the one whose package is missing with a clear tool error", async () => {
    expect(await chat("Absent")).toEqual([
      expect.stringMatching(/^Error: Absent failed: ModuleNotFoundError: No module named 'absent_chain' \(Python \S+: install the package there, or set AXON_PYTHON to an interpreter that has it\)$/),
    ]);
  });
});
