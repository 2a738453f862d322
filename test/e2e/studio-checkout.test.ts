import { cpSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { AgentService } from "../../src/gen/neuro_san/api/grpc/agent_pb.js";
import { finalOf, maximal, messagesOf, restChat, type Json } from "../support/chat-protocols.js";
import { ScriptedLlm } from "../support/scripted-llm/scripted-llm.js";
import { projectRoot, startTestServer, type TestServer } from "../support/server.js";
import { callingFirst } from "../support/tool-script.js";

/**
 * A neuro-san-studio-like checkout (test/fixtures/studio), copied somewhere else and served from Axon's own working
 * directory with AGENT_MANIFEST_FILE pointing into it, as `npm start` would, with only an OpenAI key.
 */
describe("a neuro-san-studio checkout", () => {
  let checkout: string;
  let llm: ScriptedLlm;
  let bedrock: ScriptedLlm;
  let server: TestServer;
  beforeAll(async () => {
    checkout = mkdtempSync(path.join(os.tmpdir(), "axon-studio-"));
    cpSync(path.join(projectRoot, "test/fixtures/studio"), checkout, { recursive: true });
    [llm, bedrock] = await Promise.all([ScriptedLlm.start("openai"), ScriptedLlm.start("bedrock")]);
    server = await startTestServer({
      env: {
        ...llm.env,
        ...bedrock.env,
        AGENT_MANIFEST_FILE: path.join(checkout, "registries/manifest.hocon"),
        AGENT_TOOL_PATH: path.join(checkout, "coded_tools"),
        STUDIO_FALLBACK_MODEL: "gpt-4o-mini",
        STUDIO_GREETER_DESCRIPTION: "Greets in the studio",
      },
    });
  });
  afterAll(async () => {
    await server?.close();
    await Promise.all([llm?.close(), bedrock?.close()]);
    rmSync(checkout, { recursive: true, force: true });
  });
  beforeEach(() => {
    llm.reset();
    bedrock.reset();
  });

  it("serves every network of its sub-manifests, named by their paths, with only warnings to report", async () => {
    const listed = (await (await fetch(`${server.url}/api/v1/list`)).json()) as Json;
    expect(listed.agents.map((agent: Json) => [agent.agent_name, agent.description])).toEqual([
      ["basic/greeter", "Greets in the studio"],
      ["industry/store", "Answers about the store's stock"],
      ["industry/Order Desk", "Takes orders"],
      ["industry/legacy_bedrock", "Runs on Bedrock"],
    ]);
    expect(server.registry.problems.filter((problem) => problem.severity !== "warning")).toEqual([]);
    expect(server.registry.problems.map((problem) => [path.relative(checkout, problem.file), problem.key])).toEqual([
      ["registries/basic/greeter.hocon", "tools[0].name"],
      ["registries/industry/store.hocon", "tools[2].toolbox"],
      ["registries/industry/Order Desk.hocon", "tools[0].name"],
    ]);
  });

  it("a chat runs on the first model of its fallback chain that has a key, and reaches a network in another folder", async () => {
    llm.script(callingFirst(() => ({ name: "store", arguments: { inquiry: "apples" } })));
    const lines = await restChat(server, "basic/greeter", { user_message: { text: "How many apples?" }, chat_filter: maximal });
    expect(finalOf(lines)).toMatchObject({ type: "AGENT_FRAMEWORK", text: expect.stringContaining("Answer") });
    const store = messagesOf(lines).find((message) => message.type === "AGENT_TOOL_RESULT" && message.origin.length === 1);
    expect(store.tool_result_origin.at(-1)).toEqual({ tool: "/industry/store", instantiation_index: 1 });
    expect(new Set(llm.requests.map((request) => request.body["model"]))).toEqual(new Set(["gpt-4o-mini"]));
    // The front man's name has a space: LLMs are offered it with an underscore, clients see it as written.
    expect(messagesOf(lines)[0].origin).toEqual([{ tool: "Greeting Desk", instantiation_index: 1 }]);
  });

  it("answers Function and Connectivity of networks in folders and with spaces, over REST and gRPC", async () => {
    const described = (await (await fetch(`${server.url}/api/v1/${encodeURIComponent("industry/store")}/function`)).json()) as Json;
    expect(described.function.description).toBe("Answers about the store's stock.");
    const agent = createClient(AgentService, createGrpcTransport({ baseUrl: server.url }));
    const desk = await agent.connectivity({ agentName: "industry/Order Desk" });
    expect(desk.connectivityInfo.map((info) => info.origin)).toEqual(["Order Desk"]);
    const store = await agent.connectivity({ agentName: "industry/store" });
    expect(store.connectivityInfo.map((info) => [info.origin, info.displayAs])).toEqual([
      ["store_front", "llm_agent"],
      ["inventory", "coded_tool"],
      ["web", "langchain_tool"],
    ]);
  });

  it("a model only Bedrock serves goes to Bedrock's Converse API under neuro-san's model id, and nowhere else", async () => {
    const lines = await restChat(server, "industry/legacy_bedrock", { user_message: { text: "hi" } });
    expect(finalOf(lines)).toMatchObject({ type: "AGENT_FRAMEWORK", text: expect.stringContaining("Answer") });
    expect(bedrock.requests.map((request) => request.request.model)).toEqual(["us.anthropic.claude-3-7-sonnet-20250219-v1:0"]);
    expect(llm.requests).toHaveLength(0);
  });
});
