import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { finalOf, maximal, messagesOf, restChat } from "../support/chat-protocols.js";
import { SCRIPTED_API_KEY, ScriptedLlm } from "../support/scripted-llm/scripted-llm.js";
import { projectRoot, startTestServer, type TestServer } from "../support/server.js";
import { callingFirst } from "../support/tool-script.js";

const fixtures = path.join(projectRoot, "test/fixtures/llm/registries");

/** A client's own OpenAI key, as neuro-san's clients send it; it must reach the LLM of the network called, nothing else. */
const clientKey = "sk-client-own-key-7f3a9c0e1b2d4f6a8c";

describe("llm_config as neuro-san networks write it, served by the built-in runtime", () => {
  let llm: ScriptedLlm;
  let gateway: ScriptedLlm;
  let server: TestServer;
  const logLines: string[] = [];
  /** Another server's network, downstream of remote_key: it records what it is sent. */
  const remoteBodies: string[] = [];
  const remote = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk: Buffer) => (body += chunk.toString()));
    request.on("end", () => {
      remoteBodies.push(body);
      response.writeHead(200, { "content-type": "application/json" }).end();
    });
  });

  beforeAll(async () => {
    remote.listen(0, "127.0.0.1");
    await once(remote, "listening");
    const remoteUrl = `http://127.0.0.1:${(remote.address() as AddressInfo).port}`;
    [llm, gateway] = await Promise.all([ScriptedLlm.start("openai"), ScriptedLlm.start("openai")]);
    server = await startTestServer({
      env: { ...llm.env, AGENT_MANIFEST_FILE: path.join(fixtures, "manifest.hocon"), TEAM_GATEWAY_URL: gateway.baseUrl, REMOTE_SERVER_URL: remoteUrl },
      logLines,
    });
  });
  afterAll(async () => {
    await server?.close();
    await Promise.all([llm?.close(), gateway?.close()]);
    remote.close();
  });
  beforeEach(() => {
    llm.reset();
    gateway.reset();
  });

  describe("a network that runs on the client's own API key (openai_api_key: sly_data)", () => {
    const chatWithKey = (key: unknown) =>
      restChat(server, "own_key", { user_message: { text: "Who wrote Yellow Submarine?" }, chat_filter: maximal, sly_data: { llm_config: { openai_api_key: key }, fan: "yes" } });

    it("pays its own LLM calls with the key of each request, and the called network's with the server's", async () => {
      llm.script(callingFirst(() => ({ name: "helper", arguments: { inquiry: "the band" } })));
      const lines = await chatWithKey(clientKey);
      expect(finalOf(lines)).toMatchObject({ type: "AGENT_FRAMEWORK" });
      const byNetwork = llm.requests.map((request) => [request.request.system, request.credential]);
      expect(byNetwork).toEqual([
        ["Ask the helper, then answer.", clientKey],
        ["Help.", SCRIPTED_API_KEY],
        ["Ask the helper, then answer.", clientKey],
      ]);

      llm.reset();
      llm.script(callingFirst(() => ({ name: "helper", arguments: { inquiry: "the band" } })));
      const another = "sk-another-client-key-0000000000";
      await chatWithKey(another);
      expect(llm.requests.map((request) => request.credential)).toEqual([another, SCRIPTED_API_KEY, another]);
    });

    it("the key reaches no tool, no other network, no answer, no LLM prompt and no log line", async () => {
      llm.script(callingFirst(() => ({ name: "helper", arguments: { inquiry: "the band" } })));
      logLines.length = 0;
      const lines = await chatWithKey(clientKey);
      const final = finalOf(lines);
      // Every policy of the network is open: the rest of sly_data went down to /helper and back up to the client.
      expect(final.sly_data).toEqual({ fan: "yes" });
      expect(JSON.stringify(messagesOf(lines))).not.toContain(clientKey);
      expect(JSON.stringify(llm.requests.map((request) => request.body))).not.toContain(clientKey);
      expect(logLines.length).toBeGreaterThan(0);
      expect(logLines.join("\n")).not.toContain(clientKey);
    });

    it("a network on another server gets the rest of sly_data, never the key", async () => {
      llm.script(callingFirst(() => ({ name: "helper", arguments: { inquiry: "the band" } })));
      const lines = await restChat(server, "remote_key", { user_message: { text: "Ask away" }, sly_data: { llm_config: { openai_api_key: clientKey }, fan: "yes" } });
      expect(finalOf(lines)).toMatchObject({ type: "AGENT_FRAMEWORK" });
      expect(remoteBodies).toHaveLength(1);
      expect(JSON.parse(remoteBodies[0]!)).toMatchObject({ sly_data: { fan: "yes" } });
      expect(remoteBodies[0]).not.toContain(clientKey);
      expect(remoteBodies[0]).not.toContain("llm_config");
      expect(llm.requests.map((request) => request.credential)).toEqual([clientKey, clientKey]);
    });

    it("without the key the chat is refused before any LLM call, naming the sly_data key and never the server's key", async () => {
      const [refused] = await restChat(server, "own_key", { user_message: { text: "hi" } });
      expect(refused).toMatchObject({
        http_status: 400,
        code: 3,
        details: [expect.objectContaining({ reason: "LLM_CLIENT_KEY_MISSING", metadata: expect.objectContaining({ key: "sly_data.llm_config.openai_api_key" }) })],
      });
      expect(JSON.stringify(refused)).not.toContain(SCRIPTED_API_KEY);
      expect(llm.requests).toHaveLength(0);
    });

    it("a key that is not a string is refused like a missing one", async () => {
      const [refused] = await chatWithKey(42);
      expect(refused).toMatchObject({ http_status: 400, details: [expect.objectContaining({ reason: "LLM_CLIENT_KEY_MISSING" })] });
      expect(llm.requests).toHaveLength(0);
    });
  });

  it("a model and class from the network's llm_info_file: its endpoint, its model name and its default args", async () => {
    const lines = await restChat(server, "custom_model", { user_message: { text: "hello" } });
    expect(finalOf(lines)).toMatchObject({ type: "AGENT_FRAMEWORK" });
    expect(llm.requests).toHaveLength(0);
    expect(gateway.requests).toHaveLength(1);
    expect(gateway.requests[0]?.body).toMatchObject({ model: "vendor/team-model-v2", seed: 7, top_p: 0.5 });
  });

  it("an option the model's provider cannot take refuses the network at load, naming the key where it is written", async () => {
    const refused = server.registry.problems.filter((problem) => problem.file.endsWith("refused_option.hocon"));
    expect(refused).toEqual([
      expect.objectContaining({ key: "tools[1].llm_config.reasoning_effort", reason: expect.stringContaining("network refused_option is not served") }),
    ]);
    expect(refused[0]?.severity).toBeUndefined();
    expect(server.registry.get("refused_option")).toBeUndefined();
    expect(server.registry.get("own_key")).toBeDefined();
  });
});
