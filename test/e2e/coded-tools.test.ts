import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { finalOf, maximal, messagesOf, protocols, type Json } from "../support/chat-protocols.js";
import { ScriptedLlm } from "../support/scripted-llm/scripted-llm.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { callingTheNamedTool } from "../support/tool-script.js";

const fixtures = {
  AGENT_MANIFEST_FILE: "test/fixtures/parity/registries/manifest.hocon",
  AGENT_TOOL_PATH: "test/fixtures/parity/coded_tools",
};

const toolResultOf = (lines: Json[]) => messagesOf(lines).find((message) => message.type === "AGENT_TOOL_RESULT");

describe.each(protocols)("values JSON cannot carry, from a coded tool, over %s", (_name, chat) => {
  let llm: ScriptedLlm;
  let server: TestServer;
  const logLines: string[] = [];
  beforeAll(async () => {
    llm = await ScriptedLlm.start("openai");
    server = await startTestServer({ env: { ...llm.env, ...fixtures }, logLines });
  });
  afterAll(async () => {
    await server.close();
    await llm.close();
  });
  beforeEach(() => {
    llm.reset();
    llm.script(callingTheNamedTool);
    logLines.length = 0;
  });

  const logged = () => logLines.map((line) => JSON.parse(line) as Json).filter((line) => line.msg === "tool failed");

  it("NaN written to sly_data is a tool error naming the tool and the value, not kept, logged; the chat goes on", async () => {
    const lines = await chat(server, "odd_values", { user_message: { text: "Spoiler" }, sly_data: { total: 12 }, chat_filter: maximal });
    expect(toolResultOf(lines).text).toBe(
      "Error: Spoiler failed: the coded tool wrote a value JSON cannot carry, which was not kept: sly_data.total is NaN",
    );
    const final = finalOf(lines);
    expect(final.type).toBe("AGENT_FRAMEWORK");
    // The bad key keeps its value from before the call; what the tool wrote that is JSON stays.
    expect(final.sly_data).toEqual({ total: 12, extra: "kept" });
    expect(logged()).toMatchObject([{ tool: "Spoiler", network: "odd_values", err: { message: expect.stringContaining("sly_data.total is NaN") } }]);
  });

  it("Infinity returned is a tool error naming the tool and the value", async () => {
    const lines = await chat(server, "odd_values", { user_message: { text: "Overflow" }, chat_filter: maximal });
    expect(toolResultOf(lines).text).toBe("Error: Overflow failed: the coded tool returned a value JSON cannot carry: the result.ratio is Infinity");
    expect(finalOf(lines).type).toBe("AGENT_FRAMEWORK");
    expect(logged()).toMatchObject([{ tool: "Overflow" }]);
  });

  it("NaN reported as progress fails the call and is never streamed", async () => {
    const lines = await chat(server, "odd_values", { user_message: { text: "Noisy" }, chat_filter: maximal });
    expect(toolResultOf(lines).text).toBe(
      "Error: Noisy failed: the coded tool reported progress JSON cannot carry: the progress.done is NaN",
    );
    expect(messagesOf(lines).filter((message) => message.type === "AGENT_PROGRESS")).toEqual([]);
    expect(finalOf(lines).type).toBe("AGENT_FRAMEWORK");
  });
});

describe("a Python coded tool", () => {
  let llm: ScriptedLlm;
  let server: TestServer;
  beforeAll(async () => {
    llm = await ScriptedLlm.start("openai");
    server = await startTestServer({ env: { ...llm.env, ...fixtures } });
  });
  afterAll(async () => {
    await server.close();
    await llm.close();
  });

  it("loads without a warning", () => {
    expect(server.registry.problems.filter((problem) => problem.file.endsWith("python_tool.hocon"))).toEqual([]);
  });

  it.each(protocols)("runs in a Python worker and answers, over %s", async (_name, chat) => {
    const lines = await chat(server, "python_tool", { user_message: { text: "go" }, chat_filter: maximal });
    expect(toolResultOf(lines).text).toBe("from Python");
    expect(finalOf(lines).type).toBe("AGENT_FRAMEWORK");
  });
});
