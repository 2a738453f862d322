import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { JsonObject } from "@bufbuild/protobuf";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { finalOf, maximal, messagesOf, protocols, restChat, type Json } from "../support/chat-protocols.js";
import { ScriptedLlm } from "../support/scripted-llm/scripted-llm.js";
import { ScriptedMcpServer } from "../support/scripted-mcp.js";
import { ScriptedTokenEndpoint } from "../support/scripted-token-endpoint.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { callingFirst } from "../support/tool-script.js";

const secret = () => randomBytes(32).toString("base64url");

const folders: string[] = [];
afterAll(() => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

/** A folder of files the servers read: client secrets and the MCP info file, which names servers by their (dynamic) URLs. */
function writeFiles(files: Record<string, string>): Record<string, string> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "axon-mcp-tools-"));
  folders.push(dir);
  return Object.fromEntries(
    Object.entries(files).map(([name, text]) => {
      writeFileSync(path.join(dir, name), text, { mode: 0o600 });
      return [name, path.join(dir, name)];
    }),
  );
}

describe("MCP servers as tools", () => {
  let llm: ScriptedLlm;
  let mcp: ScriptedMcpServer;
  let tokens: ScriptedTokenEndpoint;
  const oauthSecret = `oauth-${secret()}`;
  const logLines: string[] = [];
  /** Serves the example networks, and its own /mcp. */
  let other: TestServer;
  /** Serves the networks that use MCP servers, ours and the other Axon's. */
  let server: TestServer;
  const mcpToken = `mcp-${secret()}`;
  const aliceOnOther = secret();
  const aliceHere = secret();
  /** What the LLM was offered, per request; and which tool the script makes it call first. */
  let callFirst: { name: string; arguments: JsonObject } | undefined;

  beforeAll(async () => {
    [llm, mcp, tokens] = await Promise.all([ScriptedLlm.start("openai"), ScriptedMcpServer.start(), ScriptedTokenEndpoint.start()]);
    const otherFiles = writeFiles({ clients: `alice = ${aliceOnOther}\n` });
    other = await startTestServer({ env: { ...llm.env, AXON_CLIENTS_FILE: otherFiles.clients! } });
    const otherMcp = `${other.url}/mcp`;
    const files = writeFiles({
      clients: `alice = ${aliceHere}\n`,
      "mcp_info.hocon": `{
        "${mcp.url}": {
          http_headers { Authorization: "Bearer "\${SCRIPTED_MCP_TOKEN} }
          # The header wins: no token is fetched for this server.
          mcp_client_info { client_id: "unused", client_secret: "unused" }
          mcp_server_info { token_endpoint: "${tokens.url}" }
        }
        "${mcp.url}?via=oauth": {
          mcp_client_info { client_id: "axon", client_secret: \${OAUTH_CLIENT_SECRET}, scope: "tools" }
          mcp_server_info { token_endpoint: "${tokens.url}" }
        }
        "${otherMcp}": { http_headers { Authorization: "Bearer "\${OTHER_AXON_SECRET} } }
      }`,
    });
    server = await startTestServer({
      logLines,
      env: {
        ...llm.env,
        AGENT_MANIFEST_FILE: "test/fixtures/parity/registries/mcp_manifest.hocon",
        AGENT_MCP_INFO_FILE: files["mcp_info.hocon"]!,
        AXON_CLIENTS_FILE: files.clients!,
        SCRIPTED_MCP_URL: mcp.url,
        SCRIPTED_MCP_OAUTH_URL: `${mcp.url}?via=oauth`,
        OAUTH_CLIENT_SECRET: oauthSecret,
        AXON_MCP_URL: otherMcp,
        SCRIPTED_MCP_TOKEN: mcpToken,
        OTHER_AXON_SECRET: aliceOnOther,
      },
    });
  });
  afterAll(async () => {
    await server?.close();
    await other?.close();
    await Promise.all([llm?.close(), mcp?.close(), tokens?.close()]);
  });
  beforeEach(() => {
    llm.reset();
    mcp.reset();
    callFirst = undefined;
    llm.script(callingFirst(() => callFirst));
  });

  const offeredTo = (agentInstructions: string) =>
    llm.requests.filter((request) => request.request.system === agentInstructions).map((request) => request.request.tools.map((tool) => tool.name))[0];
  const toolResult = (lines: Json[]) => messagesOf(lines).find((message) => message.type === "AGENT_TOOL_RESULT");

  describe.each(protocols)("over %s", (_name, chat) => {
    it("offers every tool of a server named by its URL, under names providers accept, and streams its calls like a coded tool's", async () => {
      callFirst = { name: "deep_echo", arguments: { text: "hello" } };
      const lines = await chat(server, "mcp_all", { user_message: { text: "echo hello" }, chat_filter: maximal });
      expect(offeredTo("Use the MCP tools.")).toEqual(["add", "deep_echo", "fail"]);
      // The server is called by the tool's own name.
      expect(mcp.calls.map((call) => [call.tool, call.arguments])).toEqual([["deep.echo", { text: "hello" }]]);
      const operator = { tool: "Operator", instantiation_index: 1 };
      const echo = [operator, { tool: "deep_echo", instantiation_index: 1 }];
      const messages = messagesOf(lines);
      expect(messages.filter((message) => message.type === "AGENT" && message.structure?.invoking_start)).toEqual([
        expect.objectContaining({ origin: [operator], structure: { invoking_start: true, invoked_agent_name: "deep_echo", params: { text: "hello" } } }),
      ]);
      expect(messages.filter((message) => JSON.stringify(message.origin) === JSON.stringify(echo)).map((message) => message.structure)).toEqual([
        { tool_start: true, tool_args: { text: "hello" } },
        { tool_end: true, tool_output: "echo: hello" },
      ]);
      expect(toolResult(lines)).toMatchObject({ origin: [operator], tool_result_origin: echo, text: "echo: hello" });
      expect(finalOf(lines)).toMatchObject({ type: "AGENT_FRAMEWORK", text: "Answer: echo: hello" });
    });
  });

  it("offers only the tools a {url, tools} entry allows", async () => {
    callFirst = { name: "add", arguments: { a: 2, b: 3 } };
    const lines = await restChat(server, "mcp_filtered", { user_message: { text: "2 and 3" }, chat_filter: maximal });
    expect(offeredTo("Add.")).toEqual(["add", "deep_echo"]);
    expect(toolResult(lines).text).toBe("5");
  });

  it("sends the headers of the MCP info file, its substitutions resolved, with every request", async () => {
    callFirst = { name: "add", arguments: { a: 1, b: 1 } };
    await restChat(server, "mcp_all", { user_message: { text: "1 and 1" } });
    expect(mcp.requests.length).toBeGreaterThan(0);
    expect(new Set(mcp.requests.map((headers) => headers.authorization))).toEqual(new Set([`Bearer ${mcpToken}`]));
    expect(tokens.requests).toEqual([]);
  });

  it("a client's own sly_data http_headers for a server win over the info file's, and reach neither the LLM nor the logs", async () => {
    callFirst = { name: "add", arguments: { a: 1, b: 2 } };
    const own = `client-${secret()}`;
    const lines = await restChat(server, "mcp_all", {
      user_message: { text: "1 and 2" },
      sly_data: { http_headers: { [mcp.url]: { Authorization: `Bearer ${own}` } } },
      chat_filter: maximal,
    });
    expect(toolResult(lines).text).toBe("3");
    expect(new Set(mcp.requests.map((headers) => headers.authorization))).toEqual(new Set([`Bearer ${own}`]));
    expect(JSON.stringify(llm.requests)).not.toContain(own);
    expect(JSON.stringify(messagesOf(lines))).not.toContain(own);
    expect(logLines.join("\n")).not.toContain(own);
  });

  it("OAuth2 client credentials from the info file: a token is fetched once, cached across chats, and sent as the bearer", async () => {
    callFirst = { name: "add", arguments: { a: 2, b: 2 } };
    for (const _ of [1, 2]) {
      const lines = await restChat(server, "mcp_oauth", { user_message: { text: "2 and 2" }, chat_filter: maximal });
      expect(toolResult(lines).text).toBe("4");
    }
    expect(tokens.requests).toHaveLength(1);
    expect(tokens.requests[0]!.headers.authorization).toBe(`Basic ${Buffer.from(`axon:${encodeURIComponent(oauthSecret)}`).toString("base64")}`);
    expect(Object.fromEntries(tokens.requests[0]!.form)).toEqual({ grant_type: "client_credentials", scope: "tools" });
    expect(new Set(mcp.requests.map((headers) => headers.authorization))).toEqual(new Set(["Bearer token-1"]));
    expect(logLines.join("\n")).not.toContain(oauthSecret);
    expect(logLines.join("\n")).not.toContain("token-1");
  });

  it("an error result of a tool is a tool error the LLM can read", async () => {
    callFirst = { name: "fail", arguments: { why: "no reason" } };
    const lines = await restChat(server, "mcp_all", { user_message: { text: "fail" }, chat_filter: maximal });
    expect(toolResult(lines).text).toBe("Error: fail failed: refused: no reason");
    expect(finalOf(lines).type).toBe("AGENT_FRAMEWORK");
  });

  it("an unreachable server is one tool whose calls say it could not be reached; the chat goes on", async () => {
    const lines = await restChat(server, "mcp_down", { user_message: { text: "try" }, chat_filter: maximal });
    expect(offeredTo("Try the tools.")).toEqual(["mcp"]);
    expect(toolResult(lines).text).toMatch(/^Error: mcp failed: the MCP server http:\/\/127\.0\.0\.1:9\/mcp could not be reached: /);
    expect(finalOf(lines).type).toBe("AGENT_FRAMEWORK");
  });

  it("another Axon's network is a tool through that Axon's own /mcp, with the bearer from the MCP info file", async () => {
    callFirst = { name: "hello_world", arguments: { user_message: { text: "Welsh" } } };
    const lines = await restChat(server, "mcp_axon", { user_message: { text: "Welsh" }, chat_filter: maximal });
    expect(offeredTo("Ask the other server.")).toEqual(["hello_world"]);
    // The other Axon ran its hello_world network: its front man's instructions reached the LLM too.
    expect(llm.requests.some((request) => request.request.system?.includes("greeter"))).toBe(true);
    expect(toolResult(lines).text).toContain("Answer");
    expect(finalOf(lines).type).toBe("AGENT_FRAMEWORK");
  });
});

describe("the manifest's mcp key", () => {
  let server: TestServer;
  const alice = secret();
  beforeAll(async () => {
    const files = writeFiles({ clients: `alice = ${alice}\n` });
    server = await startTestServer({
      env: {
        AGENT_MANIFEST_FILE: "test/fixtures/parity/registries/mcp_manifest.hocon",
        AXON_CLIENTS_FILE: files.clients!,
        SCRIPTED_MCP_URL: "http://127.0.0.1:9/mcp",
        AXON_MCP_URL: "http://127.0.0.1:9/mcp",
      },
    });
  });
  afterAll(async () => {
    await server?.close();
  });

  it("mcp: false keeps a public network listed but off Axon's MCP tools", async () => {
    const listed = (await (await fetch(`${server.url}/api/v1/list`)).json()) as Json;
    expect(listed.agents.map((agent: Json) => agent.agent_name)).toContain("not_an_mcp_tool");
    const client = new Client({ name: "axon-test", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${alice}` } } }));
    try {
      const names = (await client.listTools()).tools.map((tool) => tool.name);
      expect(names).toContain("mcp_all");
      expect(names).not.toContain("not_an_mcp_tool");
    } finally {
      await client.close();
    }
  });
});
