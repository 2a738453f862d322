import { execFile } from "node:child_process";
import { mkdtemp, mkdir, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAxonProcess, type AxonProcess } from "../support/axon-process.js";
import { ScriptedLlm } from "../support/scripted-llm/scripted-llm.js";

type Json = Record<string, any>;
const run = promisify(execFile);

/** A front man without tools: the scripted model answers `Answer: <what the user said>`. */
const network = (description: string, allow = "") => `
  llm_config { model_name: "gpt-4o-mini" }
  tools: [ { name: "Announcer", function { description: "${description}" }, instructions: "Announce it.", ${allow} } ]
`;

/** A registry of its own, with the names neuro-san's MCP rules are about. */
async function writeRegistry(): Promise<string> {
  const root = await mkdtemp(path.join(tmpdir(), "axon-mcp-registry-"));
  const files: Record<string, string> = {
    "manifest.hocon": `
      "hello_world.hocon": true
      "deep/math_guy.hocon": true
      "Agent.1.hocon": true
      "renamed.hocon": {mcp_name: "greeter"}
      "behind.hocon": {public: false}
      "quiet.hocon": {mcp: false}
    `,
    "hello_world.hocon": network("I can help you to make a terse announcement.", 'allow { to_upstream { sly_data: ["shown"] } }'),
    "deep/math_guy.hocon": network("I do sums."),
    "Agent.1.hocon": network("Agent one."),
    "renamed.hocon": network("I greet."),
    "behind.hocon": network("Private."),
    "quiet.hocon": network("Not a tool."),
  };
  for (const [name, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(root, name)), { recursive: true });
    await writeFile(path.join(root, name), text);
  }
  return path.join(root, "manifest.hocon");
}

/** One documented curl call: the status line's code, the headers and the body. */
async function curl(url: string, body: Json, headers: string[] = []): Promise<{ status: number; headers: string; body: string }> {
  const args = ["-s", "-i", "-X", "POST", url, "-H", "Content-Type: application/json", ...headers.flatMap((header) => ["-H", header]), "-d", JSON.stringify(body)];
  const { stdout } = await run("curl", args);
  const [head = "", ...rest] = stdout.split("\r\n\r\n");
  return { status: Number(head.split(" ")[1]), headers: head.toLowerCase(), body: rest.join("\r\n\r\n") };
}

describe("neuro-san's MCP service", () => {
  let llm: ScriptedLlm;
  let axon: AxonProcess;
  let mcpUrl: string;
  const clients: Client[] = [];

  beforeAll(async () => {
    llm = await ScriptedLlm.start("openai");
    axon = await startAxonProcess({ ...llm.env, AGENT_MANIFEST_FILE: await writeRegistry() });
    mcpUrl = `${axon.url}/mcp`;
  });
  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close()));
    await axon?.stop();
    await llm?.close();
  });

  async function anonymousClient(): Promise<Client> {
    const client = new Client({ name: "neuro-san-style", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl)));
    clients.push(client);
    return client;
  }

  it("answers neuro-san's documented curl exchange without a token, a session or SSE", async () => {
    const initialize = await curl(mcpUrl, { jsonrpc: "2.0", id: 1, method: "initialize", params: {} });
    expect(initialize.status, initialize.body).toBe(200);
    expect(initialize.headers).toContain("content-type: application/json");
    expect(initialize.headers).not.toContain("mcp-session-id");
    expect(JSON.parse(initialize.body)).toMatchObject({ jsonrpc: "2.0", id: 1, result: { protocolVersion: "2025-06-18", capabilities: { tools: {} } } });

    const version = ["MCP-Protocol-Version: 2025-06-18"];
    const initialized = await curl(mcpUrl, { jsonrpc: "2.0", id: 2, method: "notifications/initialized", params: {} }, version);
    expect(initialized.status).toBe(202);

    const list = await curl(mcpUrl, { jsonrpc: "2.0", id: 3, method: "tools/list", params: {} }, version);
    expect(list.status).toBe(200);
    const tools = JSON.parse(list.body).result.tools as Json[];
    expect(tools.map((tool) => tool.name)).toEqual(["hello_world", "deep__math_guy", "Agent_1", "greeter"]);

    const call = await curl(
      mcpUrl,
      { jsonrpc: "2.0", id: 4, method: "tools/call", params: { name: "hello_world", arguments: { user_message: { text: "Say hello in two words" } } } },
      version,
    );
    expect(call.status).toBe(200);
    const answer = JSON.parse(call.body) as Json;
    expect(answer).toMatchObject({ jsonrpc: "2.0", id: 4, result: { content: [{ type: "text", text: "Answer: Say hello in two words" }], isError: false } });
  });

  it("lists each network under its safe name with its own name as title, the front man's description and ChatRequest as input", async () => {
    const { tools } = await (await anonymousClient()).listTools();
    expect(tools.map(({ name, title, description }) => ({ name, title, description }))).toEqual([
      { name: "hello_world", title: "hello_world", description: "I can help you to make a terse announcement." },
      { name: "deep__math_guy", title: "deep/math_guy", description: "I do sums." },
      { name: "Agent_1", title: "Agent.1", description: "Agent one." },
      { name: "greeter", title: "renamed", description: "I greet." },
    ]);
    // neuro-san's ChatRequest schema, at the root and under components.schemas.ChatRequest alike.
    const schema = tools[0]!.inputSchema as Json;
    const { components, ...root } = schema;
    expect(root).toEqual(components.schemas.ChatRequest);
    expect(Object.keys(root.properties).sort()).toEqual(["chat_context", "chat_filter", "sly_data", "user_message"]);
    expect(root).toMatchObject({ type: "object", required: ["user_message"], additionalProperties: false });
    expect(root.properties.user_message).toEqual({ $ref: "#/components/schemas/ChatMessage" });
    expect(components.schemas.ChatMessage.properties.text).toEqual({ type: "string" });
    // Every reference resolves inside the schema itself.
    for (const [, name] of JSON.stringify(schema).matchAll(/"#\/components\/schemas\/([^"]+)"/g)) expect(schema.components.schemas).toHaveProperty([name!]);
  });

  it("a ChatRequest call answers the final text, and its chat_context continues the conversation", async () => {
    const client = await anonymousClient();
    const first = (await client.callTool({ name: "deep__math_guy", arguments: { user_message: { text: "what is 2 and 2" } } })) as CallToolResult;
    expect(first.content).toEqual([{ type: "text", text: "Answer: what is 2 and 2" }]);
    const { chat_context } = first.structuredContent as Json;
    expect(chat_context.chat_histories).toEqual(expect.any(Array));

    const second = (await client.callTool({ name: "deep__math_guy", arguments: { user_message: { text: "and 3 more" }, chat_context } })) as CallToolResult;
    expect(second.content).toEqual([{ type: "text", text: "Answer: and 3 more" }]);
    const seen = llm.requests.at(-1)!.request.messages.map((message) => message.content);
    expect(seen).toEqual(expect.arrayContaining(["what is 2 and 2", "Answer: what is 2 and 2", "and 3 more"]));
  });

  it("answers sly_data as the front man's to_upstream lets it out, and still takes Axon's {text} shape", async () => {
    const client = await anonymousClient();
    const result = (await client.callTool({ name: "hello_world", arguments: { text: "Welsh", sly_data: { shown: 1, kept: 2 } } })) as CallToolResult;
    expect(result.content).toEqual([{ type: "text", text: "Answer: Welsh" }]);
    expect(result.structuredContent).toMatchObject({ text: "Answer: Welsh", sly_data: { shown: 1 } });
    expect((result.structuredContent as Json).sly_data).not.toHaveProperty("kept");
  });

  it("takes a network's own name as well as its tool name; unlisted networks are no tools", async () => {
    const client = await anonymousClient();
    const byOwnName = (await client.callTool({ name: "deep/math_guy", arguments: { user_message: { text: "hi" } } })) as CallToolResult;
    expect(byOwnName.content).toEqual([{ type: "text", text: "Answer: hi" }]);
    for (const name of ["behind", "quiet", "nowhere"]) {
      const refused = (await client.callTool({ name, arguments: { user_message: { text: "hi" } } })) as CallToolResult;
      expect(refused.isError, name).toBe(true);
      expect(JSON.parse((refused.content[0] as { text: string }).text)).toMatchObject({ code: "tool_not_found" });
    }
  });

  it("refuses arguments that are no ChatRequest as invalid_argument tool errors", async () => {
    const client = await anonymousClient();
    const cases: [Json, string][] = [
      [{ user_message: { text: "" } }, "user_message.text"],
      [{ user_message: { text: "hi" }, text: "hi" }, "text"],
      [{}, "user_message.text"],
    ];
    for (const [args, field] of cases) {
      const result = (await client.callTool({ name: "hello_world", arguments: args })) as CallToolResult;
      expect(result.isError, JSON.stringify(args)).toBe(true);
      expect(JSON.parse((result.content[0] as { text: string }).text)).toMatchObject({ code: "invalid_argument", field_violations: [{ field }] });
    }
    const wrongType = (await client.callTool({ name: "hello_world", arguments: { user_message: { text: 7 } } })) as CallToolResult;
    expect(JSON.parse((wrongType.content[0] as { text: string }).text)).toMatchObject({ code: "invalid_argument", message: expect.stringContaining("ChatRequest") });
  });

  it("answers as an SSE stream when the client asks for text/event-stream", async () => {
    const response = await fetch(mcpUrl, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/list", params: {} }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toContain("text/event-stream");
    const data = (await response.text()).split("\n").find((line) => line.startsWith("data: {"));
    expect(JSON.parse(data!.slice("data: ".length))).toMatchObject({ id: 9, result: { tools: expect.any(Array) } });
  });
});

describe("AGENT_MCP_ENABLE and AGENT_MCP_ONLY", () => {
  let llm: ScriptedLlm;
  let manifest: string;
  const started: AxonProcess[] = [];

  beforeAll(async () => {
    llm = await ScriptedLlm.start("openai");
    manifest = await writeRegistry();
  });
  afterAll(async () => {
    await Promise.all(started.map((axon) => axon.stop()));
    await llm?.close();
  });

  async function start(env: Record<string, string>): Promise<AxonProcess> {
    const axon = await startAxonProcess({ ...llm.env, AGENT_MANIFEST_FILE: manifest, ...env });
    started.push(axon);
    return axon;
  }

  const listTools = (axon: AxonProcess) =>
    fetch(`${axon.url}/mcp`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }) });

  it("AGENT_MCP_ONLY serves /mcp without neuro-san's own API", async () => {
    const axon = await start({ AGENT_MCP_ONLY: "true" });
    expect((await listTools(axon)).status).toBe(200);
    expect((await fetch(`${axon.url}/api/v1/list`)).status).toBe(404);
    const chat = await fetch(`${axon.url}/api/v1/hello_world/streaming_chat`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ user_message: { text: "hi" } }) });
    expect(chat.status).toBe(404);
    expect((await fetch(`${axon.url}/readyz`)).status).toBe(200);
  });

  it("AGENT_MCP_ENABLE=false leaves /mcp unserved and neuro-san's API as it is", async () => {
    const axon = await start({ AGENT_MCP_ENABLE: "false" });
    expect((await listTools(axon)).status).toBe(404);
    expect((await fetch(`${axon.url}/api/v1/list`)).status).toBe(200);
  });
});
