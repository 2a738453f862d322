import path from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { finalOf, maximal, messagesOf, restChat } from "../support/chat-protocols.js";
import { ScriptedLlm } from "../support/scripted-llm/scripted-llm.js";
import { projectRoot, startTestServer, type TestServer } from "../support/server.js";
import { callingFirst } from "../support/tool-script.js";

const fixtures = path.join(projectRoot, "test/fixtures/neuro-san-rules");

/**
 * neuro-san's rules for what network files and the environment mean, where Axon once read them otherwise. The LLM is
 * a scripted OpenAI that validates tool schemas as OpenAI does: a `"type": "float"` it receives is a 400.
 */
describe("network files as neuro-san reads them", () => {
  let llm: ScriptedLlm;
  let remote: TestServer;
  let server: TestServer;

  beforeAll(async () => {
    llm = await ScriptedLlm.start("openai", { validateToolSchemas: true });
    // Another server, whose deep/helper the caller network reaches by URL.
    remote = await startTestServer({ env: { ...llm.env, AGENT_MANIFEST_FILE: path.join(fixtures, "registries/manifest.hocon"), REMOTE_SERVER_URL: "http://127.0.0.1:1" } });
    server = await startTestServer({
      env: {
        ...llm.env,
        // Two manifests separated by a space, as neuro-san separates them (its image's `:` works too).
        AGENT_MANIFEST_FILE: `${path.join(fixtures, "registries/manifest.hocon")} ${path.join(fixtures, "more/manifest.hocon")}`,
        REMOTE_SERVER_URL: remote.url,
      },
    });
  });
  afterAll(async () => {
    await server?.close();
    await remote?.close();
    await llm?.close();
  });
  beforeEach(() => llm.reset());

  it("AGENT_MANIFEST_FILE: manifests separated by spaces are all served", async () => {
    const listed = (await (await fetch(`${server.url}/api/v1/list`)).json()) as { agents: { agent_name: string }[] };
    expect(listed.agents.map((agent) => agent.agent_name)).toEqual(["accountant", "caller", "deep/helper", "extra"]);
    expect(server.registry.problems).toEqual([]);
  });

  it("a function block's Python types reach the LLM as JSON Schema's, nested ones too, and the LLM takes them", async () => {
    llm.script(callingFirst(() => ({ name: "Accountant", arguments: { amount: 12.5, count: 2 } })));
    const lines = await restChat(server, "accountant", { user_message: { text: "12.50 for two coffees" }, chat_filter: maximal });
    expect(llm.requests.map((request) => request.status)).toEqual([200, 200, 200]);
    expect(finalOf(lines)).toMatchObject({ type: "AGENT_FRAMEWORK", text: expect.stringContaining("Answer:") });
    const offered = llm.requests[0]!.request.tools.find((tool) => tool.name === "Accountant")!;
    expect(offered.parameters).toEqual({
      type: "object",
      properties: {
        amount: { type: "number", description: "The amount so far" },
        count: { type: "integer", description: "How many items" },
        items: { type: "array", items: { type: "object", properties: { label: { type: "string" }, paid: { type: "boolean" } } } },
      },
      required: ["amount", "count"],
    });
    // What the network file wrote is still what Function answers: only the LLM's copy is renamed.
    const fn = (await (await fetch(`${server.url}/api/v1/accountant/function`)).json()) as { function: unknown };
    expect(fn.function).toEqual({ description: "Keeps the books." });
  });

  it("llm_config numbers and booleans written as strings are sent as numbers and booleans", async () => {
    llm.script(() => ({ text: "Booked." }));
    await restChat(server, "accountant", { user_message: { text: "nothing to add" } });
    expect(llm.requests[0]!.body).toMatchObject({ temperature: 0.5, max_completion_tokens: 256, top_p: 0.9 });
    expect(llm.requests[0]!.body["stream"]).not.toBe(true);
  });

  it("http://localhost/<name> without a port is this server's network, and a URL's whole path is the network's name", async () => {
    llm.script(callingFirst((request) => (request.system === "Ask the helpers." ? { name: request.tools[0]!.name, arguments: { inquiry: "here?" } } : undefined)));
    const here = messagesOf(await restChat(server, "caller", { user_message: { text: "ask" }, chat_filter: maximal }));
    // Called in process, as /deep/helper would be: the helper's own LLM call is made by this server.
    expect(llm.requests.map((request) => request.request.system)).toEqual(["Ask the helpers.", "Help.", "Ask the helpers."]);
    expect(here.at(-1)).toMatchObject({ type: "AGENT_FRAMEWORK" });

    llm.reset();
    llm.script(callingFirst((request) => (request.system === "Ask the helpers." ? { name: request.tools[1]!.name, arguments: { inquiry: "there?" } } : undefined)));
    const there = messagesOf(await restChat(server, "caller", { user_message: { text: "ask" }, chat_filter: maximal }));
    // deep/helper on the other server answered: not a network named "helper", which neither server has.
    const result = there.find((message) => message.type === "AGENT_TOOL_RESULT");
    expect(result?.text).not.toContain("could not answer");
    expect(llm.requests.map((request) => request.request.system)).toEqual(["Ask the helpers.", "Help.", "Ask the helpers."]);
  });

  it("Connectivity lists both references as written", async () => {
    const connectivity = (await (await fetch(`${server.url}/api/v1/caller/connectivity`)).json()) as { connectivity_info: { origin: string; tools?: string[] }[] };
    expect(connectivity.connectivity_info.find((node) => node.origin === "Caller")?.tools).toEqual(["http://localhost/deep/helper", `${remote.url}/deep/helper`]);
  });
});
