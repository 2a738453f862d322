import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { networkToolName } from "../../src/mcp/mcp-server.js";
import { alice, bob, operationsApi, operator, roomyAdmission, secret, startUpstream, writeFiles } from "../support/operations.js";
import { ScriptedLlm } from "../support/scripted-llm/scripted-llm.js";
import { projectRoot, startTestServer, type TestServer } from "../support/server.js";

type Json = Record<string, any>;

// alice may request http.request; bob may only chat: each sees the operation tools of its own policy.
const policy = {
  rules: [
    { id: "chat", effect: "allow", operations: ["agent.chat"] },
    { id: "http-alice", effect: "request", clients: ["alice"], operations: ["http.request"], grant_policy: { mode: "execution" } },
  ],
};
const lifecycleTools = ["operation_get", "operation_wait", "operation_list", "operation_cancel"];
const publicNetworks = ["hello_world", "math_guy", "music_nerd", "trip_planner"];
const projectionKeys = ["api_version", "id", "request_id", "operation", "state", "revision", "created_at", "updated_at", "terminal_at", "presentation", "result", "error"];

const chatCall = (requestId?: string, reason = "say hello") => ({
  target: { network: "hello_world" },
  reason,
  arguments: { text: "Welsh" },
  ...(requestId ? { request_id: requestId } : {}),
});
const httpCall = (requestId: string) => ({ target: { credential: "upstream", path: "/things" }, reason: "read the things", arguments: { method: "GET" }, request_id: requestId });

/** The structured value of a successful call, checked to be the same JSON as its text block. */
function structured(result: CallToolResult): Json {
  expect(result.isError ?? false, JSON.stringify(result.content)).toBe(false);
  const text = result.content[0];
  expect(text?.type).toBe("text");
  expect(JSON.parse((text as { text: string }).text)).toEqual(result.structuredContent);
  return result.structuredContent as Json;
}

/** The error JSON of a failed call: isError, one text block, no structured content. */
function toolError(result: CallToolResult): Json {
  expect(result.isError).toBe(true);
  expect(result.structuredContent).toBeUndefined();
  return JSON.parse((result.content[0] as { text: string }).text) as Json;
}

async function call(client: Client, name: string, args: Json): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args }, undefined, { timeout: 60_000 })) as CallToolResult;
}

describe("MCP projection (spec §9)", () => {
  let llm: ScriptedLlm;
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let env: Record<string, string>;
  let server: TestServer;
  let mcpUrl: URL;
  let api: ReturnType<typeof operationsApi>;
  const clients: Client[] = [];

  async function connect(token: string): Promise<Client> {
    const client = new Client({ name: "axon-test", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(mcpUrl, { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
    clients.push(client);
    return client;
  }

  beforeAll(async () => {
    llm = await ScriptedLlm.start("openai");
    upstream = await startUpstream();
    env = { ...llm.env, ...writeFiles(upstream.url, roomyAdmission, policy) };
    server = await startTestServer({ env });
    api = operationsApi(server.url);
    mcpUrl = new URL(`${server.url}/mcp`);
  });
  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close()));
    await server.close();
    upstream.close();
    await llm.close();
  });

  it("a bearer that names no client is 401 with WWW-Authenticate, as a google.rpc.Status", async () => {
    const initialize = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "x", version: "1" } } };
    for (const token of [secret(), operator]) {
      const response = await fetch(mcpUrl, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: `Bearer ${token}` },
        body: JSON.stringify(initialize),
      });
      expect(response.status).toBe(401);
      expect(response.headers.get("www-authenticate")).toBe("Bearer");
      const body = (await response.json()) as Json;
      expect(body.code).toBe(16);
      expect(body.details[0]).toMatchObject({ reason: "UNAUTHENTICATED", metadata: { category: "authentication" } });
    }
  });

  it("without a bearer only the network tools are listed, and operation tools are no tools", async () => {
    const client = new Client({ name: "anonymous", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(mcpUrl));
    clients.push(client);
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(publicNetworks);
    expect(toolError(await call(client, "agent_chat", chatCall("anonymous-1")))).toMatchObject({ code: "tool_not_found" });
    expect(toolError(await call(client, "operation_list", {}))).toMatchObject({ code: "tool_not_found" });
  });

  it("is stateless: GET (no stream to resume) is 405", async () => {
    const response = await fetch(mcpUrl, { headers: { authorization: `Bearer ${alice}`, accept: "text/event-stream" } });
    expect(response.status).toBe(405);
    expect(response.headers.get("allow")).toBe("POST");
  });

  it("lists the client's operation tools, the lifecycle tools and the public networks, each with an output schema", async () => {
    const { tools } = await (await connect(alice)).listTools();
    expect(tools.map((tool) => tool.name)).toEqual(["agent_chat", "http_request", ...lifecycleTools, ...publicNetworks]);
    for (const tool of tools) expect(tool.outputSchema, tool.name).toMatchObject({ type: "object" });
    const agentChat = tools.find((tool) => tool.name === "agent_chat")!;
    expect(Object.keys(agentChat.inputSchema.properties ?? {}).sort()).toEqual(["arguments", "reason", "request_id", "target"]);
    expect(agentChat.inputSchema.required?.sort()).toEqual(["arguments", "reason", "target"]);
    expect(Object.keys(agentChat.outputSchema?.properties ?? {}).sort()).toEqual([...projectionKeys].sort());
    expect(agentChat.outputSchema?.additionalProperties).toBe(false);

    const bobTools = (await (await connect(bob)).listTools()).tools.map((tool) => tool.name);
    expect(bobTools).toEqual(["agent_chat", ...lifecycleTools, ...publicNetworks]);
  });

  it("agent_chat submits at once in the closed projection, and operation_wait follows it to its result", async () => {
    const client = await connect(alice);
    const submitted = structured(await call(client, "agent_chat", chatCall("mcp-chat-1")));
    expect(submitted).toMatchObject({ api_version: "unyolo.io/mcp-operation/v1", request_id: "mcp-chat-1", operation: "agent.chat", revision: 1 });
    expect(submitted.id).toMatch(/^op_[A-Za-z0-9_-]{24}$/);
    expect(["approved", "executing", "succeeded"]).toContain(submitted.state);
    for (const key of Object.keys(submitted)) expect(projectionKeys).toContain(key);

    const done = structured(await call(client, "operation_wait", { operation_id: submitted.id }));
    expect(done).toMatchObject({ id: submitted.id, state: "succeeded", result: { text: expect.stringContaining("Answer") } });
    expect(done.terminal_at).toBeDefined();
    expect(structured(await call(client, "operation_get", { operation_id: submitted.id }))).toEqual(done);
  });

  it("without a request_id one is generated and returned, so the operation can be recovered", async () => {
    const client = await connect(alice);
    const submitted = structured(await call(client, "agent_chat", chatCall(undefined, "no key")));
    expect(submitted.request_id).toMatch(/^req_[A-Za-z0-9_-]{24}$/);
    const page = structured(await call(client, "operation_list", { request_id: submitted.request_id }));
    expect(page.operations.map((operation: Json) => operation.id)).toEqual([submitted.id]);
  });

  it("a retry with the same request_id returns the same operation; a different request is request_id_conflict", async () => {
    const client = await connect(alice);
    const first = structured(await call(client, "agent_chat", chatCall("mcp-retry")));
    const again = structured(await call(client, "agent_chat", chatCall("mcp-retry")));
    expect(again.id).toBe(first.id);
    const conflict = toolError(await call(client, "agent_chat", chatCall("mcp-retry", "another reason")));
    expect(conflict).toMatchObject({ code: "request_id_conflict", message: expect.any(String), existing: { id: first.id, request_id: "mcp-retry" } });
    // Bound to agent.chat, the key is no key for another operation type either.
    expect(toolError(await call(client, "http_request", httpCall("mcp-retry"))).existing.id).toBe(first.id);
  });

  it("operation_list recovers by request_id exactly, filters by state, and pages with opaque cursors", async () => {
    const client = await connect(alice);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(structured(await call(client, "agent_chat", chatCall(`mcp-page-${i}`))).id);
    const recovered = structured(await call(client, "operation_list", { request_id: "mcp-page-3" }));
    expect(recovered).toEqual({ api_version: "unyolo.io/mcp-operation-page/v1", operations: [expect.objectContaining({ id: ids[3], request_id: "mcp-page-3" })] });

    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = structured(await call(client, "operation_list", { limit: 2, ...(cursor ? { cursor } : {}) }));
      expect(page.operations.length).toBeLessThanOrEqual(2);
      for (const operation of page.operations) {
        expect(operation.result).toBeUndefined();
        seen.push(operation.id);
      }
      cursor = page.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).toBeGreaterThanOrEqual(3);
    expect(new Set(seen).size).toBe(seen.length);
    // Newest first: the five just submitted lead, in reverse order.
    expect(seen.slice(0, 5)).toEqual([...ids].reverse());

    const pending = structured(await call(client, "operation_list", { state: "pending" }));
    for (const operation of pending.operations) expect(operation.state).toBe("pending");

    expect(toolError(await call(client, "operation_list", { cursor: "not-a-cursor" }))).toMatchObject({ code: "invalid_cursor" });
    expect(toolError(await call(client, "operation_list", { limit: 51 }))).toMatchObject({
      code: "invalid_argument",
      field_violations: [expect.objectContaining({ field: "limit" })],
    });
  });

  it("http_request stays pending for approval; operation_wait times out with the latest state; operation_cancel cancels it", async () => {
    const client = await connect(alice);
    const submitted = structured(await call(client, "http_request", httpCall("mcp-http-1")));
    expect(submitted).toMatchObject({ operation: "http.request", state: "pending" });
    expect(submitted).not.toHaveProperty("approval_id");

    const started = Date.now();
    const waited = structured(await call(client, "operation_wait", { operation_id: submitted.id, timeout_seconds: 1 }));
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(waited).toMatchObject({ id: submitted.id, state: "pending", revision: 1 });

    const canceled = structured(await call(client, "operation_cancel", { operation_id: submitted.id }));
    expect(canceled).toMatchObject({ state: "canceled", revision: 2, error: { code: "operation_canceled" } });
    expect(structured(await call(client, "operation_cancel", { operation_id: submitted.id }))).toEqual(canceled);
    expect(upstream.received).toHaveLength(0);
  });

  it("operation_wait wakes when an operator approves, and follows execution to the end", async () => {
    const client = await connect(alice);
    const submitted = structured(await call(client, "http_request", httpCall("mcp-http-2")));
    const waiting = call(client, "operation_wait", { operation_id: submitted.id, timeout_seconds: 20 });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await api.approve(submitted.id)).status).toBe(200);
    const done = structured(await waiting);
    expect(done).toMatchObject({ state: "succeeded", result: { status: 200 } });
  });

  it("another client's operation is not found, and timeout_seconds over 25 is refused", async () => {
    const mine = structured(await call(await connect(alice), "agent_chat", chatCall("mcp-private")));
    const theirs = await connect(bob);
    expect(toolError(await call(theirs, "operation_get", { operation_id: mine.id }))).toMatchObject({ code: "operation_not_found" });
    expect(toolError(await call(theirs, "operation_cancel", { operation_id: mine.id }))).toMatchObject({ code: "operation_not_found" });
    expect(toolError(await call(theirs, "operation_wait", { operation_id: mine.id, timeout_seconds: 26 }))).toMatchObject({
      code: "invalid_argument",
      field_violations: [expect.objectContaining({ field: "timeout_seconds" })],
    });
  });

  it("a provider's refusal is a tool error with field violations named as over MCP", async () => {
    const client = await connect(alice);
    const refused = toolError(await call(client, "agent_chat", { target: { network: "nowhere" }, reason: "x", arguments: { text: "hi" } }));
    expect(refused).toMatchObject({ code: "invalid_operation", field_violations: [expect.objectContaining({ field: "target.network" })] });
  });

  it("a public agent network is a tool answering in the same call, with chat_context in structuredContent", async () => {
    const client = await connect(alice);
    const result = await call(client, "hello_world", { text: "Welsh" });
    expect(result.isError ?? false).toBe(false);
    expect(result.content).toEqual([{ type: "text", text: expect.stringContaining("Answer") }]);
    expect(result.structuredContent).toMatchObject({ text: (result.content[0] as { text: string }).text, chat_context: expect.any(Object) });
    expect(toolError(await call(client, "back_office", { text: "hi" }))).toMatchObject({ code: "tool_not_found" }); // private: unlisted
  });
});

describe("MCP over stdio", () => {
  let llm: ScriptedLlm;
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let server: TestServer;
  let env: Record<string, string>;

  beforeAll(async () => {
    llm = await ScriptedLlm.start("openai");
    upstream = await startUpstream();
    env = { ...llm.env, ...writeFiles(upstream.url, roomyAdmission) };
    server = await startTestServer({ env });
  });
  afterAll(async () => {
    await server.close();
    upstream.close();
    await llm.close();
  });

  /** The CLI entry, over the running server's data directory: the same database, as another replica. */
  function stdioTransport(extra: Record<string, string>) {
    return new StdioClientTransport({
      // Through the CLI, as an MCP host would start it: `axon mcp`.
      command: process.execPath,
      args: ["bin/axon.mjs", "mcp"],
      cwd: projectRoot,
      env: { PATH: process.env.PATH ?? "", LOG_LEVEL: "silent", AXON_DATA_DIR: server.dataDir, ...env, ...extra },
      stderr: "pipe",
    });
  }

  it("serves the same tools for the client its token names, and shares the server's database", async () => {
    const client = new Client({ name: "axon-stdio-test", version: "1" });
    await client.connect(stdioTransport({ AXON_MCP_TOKEN: alice }));
    try {
      const names = (await client.listTools()).tools.map((tool) => tool.name);
      expect(names).toEqual(["agent_chat", "http_request", ...lifecycleTools, ...publicNetworks]);

      const submitted = structured(await call(client, "agent_chat", chatCall("stdio-chat-1")));
      const done = structured(await call(client, "operation_wait", { operation_id: submitted.id, timeout_seconds: 20 }));
      expect(done).toMatchObject({ state: "succeeded", result: { text: expect.stringContaining("Answer") } });
      // The server sees it too: one database, one client scope.
      expect((await api().get(alice, submitted.id)).body).toMatchObject({ id: submitted.id, state: "succeeded", client_id: "alice" });

      const pending = structured(await call(client, "http_request", httpCall("stdio-http-1")));
      expect(structured(await call(client, "operation_cancel", { operation_id: pending.id }))).toMatchObject({ state: "canceled" });

      const answer = await call(client, "hello_world", { text: "Welsh" });
      expect(answer.structuredContent).toMatchObject({ text: expect.stringContaining("Answer"), chat_context: expect.any(Object) });

      // The guard of the HTTP endpoint holds here too: both transports serve one MCP server.
      const deep = JSON.parse(`{"list":${"[".repeat(1000)}${"]".repeat(1000)}}`) as Json;
      expect(toolError(await call(client, "hello_world", { text: "Welsh", sly_data: deep }))).toMatchObject({
        code: "invalid_argument",
        field_violations: [{ field: expect.stringMatching(/^sly_data\.list\[0\]/), description: expect.stringContaining("deeper") }],
      });
    } finally {
      await client.close();
    }
  });

  it("refuses to start without a valid client secret", async () => {
    const transport = stdioTransport({ AXON_MCP_TOKEN: secret() });
    const exited = new Promise<void>((resolve) => (transport.onclose = resolve));
    const client = new Client({ name: "axon-stdio-test", version: "1" });
    await expect(client.connect(transport)).rejects.toThrow();
    await exited;
  });

  const api = () => operationsApi(server.url);
});

describe("network tool names", () => {
  const taken = new Set(["agent_chat", "http_request", "operation_get", "operation_wait", "operation_list", "operation_cancel"]);

  it("a network keeps its tool name, unless an operation or lifecycle tool has it: then network_<name>", () => {
    expect(networkToolName("hello_world", taken)).toBe("hello_world");
    expect(networkToolName("agent_chat", taken)).toBe("network_agent_chat");
    expect(networkToolName("operation_get", taken)).toBe("network_operation_get");
  });

  it("a name that collides twice is not offered", () => {
    expect(networkToolName("agent_chat", new Set([...taken, "network_agent_chat"]))).toBeUndefined();
  });
});
