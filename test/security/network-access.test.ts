import { writeFileSync } from "node:fs";
import path from "node:path";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentService } from "../../src/gen/neuro_san/api/grpc/agent_pb.js";
import { ConciergeService } from "../../src/gen/neuro_san/api/grpc/concierge_pb.js";
import { fixtureEnv } from "../e2e/expectations.js";
import { alice, bearer, bob, carol, operationsApi, roomyAdmission, writeFiles } from "../support/operations.js";
import { ScriptedChats } from "../support/scripted-chat.js";
import { startTestServer, type TestServer } from "../support/server.js";

type Json = Record<string, any>;

// The fixture serves greeter and relay (public) and backroom (private). carol is a client the file does not name.
const access = { alice: ["greeter", "back*"], bob: ["relay"], anonymous: ["greeter"] };
const policy = { rules: [{ id: "chat", effect: "allow", operations: ["agent.chat"] }] };

function startServer(extraEnv: Record<string, string> = {}, logLines?: string[]): Promise<TestServer> {
  const files = writeFiles("http://127.0.0.1:9", roomyAdmission, policy);
  const accessFile = path.join(path.dirname(files.AXON_CLIENTS_FILE), "access.json");
  writeFileSync(accessFile, JSON.stringify(access));
  return startTestServer({
    env: { ...fixtureEnv, ...files, AXON_NETWORK_ACCESS_FILE: accessFile, ...extraEnv },
    chats: new ScriptedChats(),
    ...(logLines ? { logLines } : {}),
  });
}

describe("networks per principal (AXON_NETWORK_ACCESS_FILE)", () => {
  let server: TestServer;
  const logLines: string[] = [];

  beforeAll(async () => {
    server = await startServer({}, logLines);
  });
  afterAll(async () => {
    await server?.close();
  });

  const rest = (route: string, token?: string, body?: Json) =>
    fetch(server.url + route, {
      method: body === undefined ? "GET" : "POST",
      headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const listed = async (token?: string) => ((await (await rest("/api/v1/list", token)).json()) as Json).agents.map((agent: Json) => agent.agent_name);

  it("says once at start-up that networks are granted per principal", () => {
    expect(logLines.filter((line) => line.includes("granted per principal"))).toHaveLength(1);
    expect(logLines.some((line) => line.includes("open to every caller"))).toBe(false);
  });

  it("List shows each caller only the public networks it may see", async () => {
    expect(await listed()).toEqual(["greeter"]);
    expect(await listed(alice)).toEqual(["greeter"]);
    expect(await listed(bob)).toEqual(["relay"]);
    expect(await listed(carol)).toEqual([]);
  });

  it("a bearer that names nobody is refused, not taken for anonymous", async () => {
    const response = await rest("/api/v1/list", "not-a-secret-of-anyone-at-all-0123456789");
    expect(response.status).toBe(401);
    expect(((await response.json()) as Json).code).toBe(Code.Unauthenticated);
  });

  it("Function, Connectivity and StreamingChat on a hidden network answer exactly as for one that does not exist", async () => {
    for (const [token, hidden] of [[undefined, "relay"], [bob, "greeter"], [bob, "backroom"], [carol, "greeter"]] as const) {
      for (const route of ["function", "connectivity"]) {
        const [denied, missing] = await Promise.all([rest(`/api/v1/${hidden}/${route}`, token), rest(`/api/v1/nowhere/${route}`, token)]);
        expect(denied.status).toBe(404);
        expect(withoutName(await denied.json(), hidden)).toEqual(withoutName(await missing.json(), "nowhere"));
      }
      const chat = { user_message: { text: "hi" } };
      const [denied, missing] = await Promise.all([rest(`/api/v1/${hidden}/streaming_chat`, token, chat), rest(`/api/v1/nowhere/streaming_chat`, token, chat)]);
      expect(denied.status).toBe(404);
      expect(withoutName(await denied.json(), hidden)).toEqual(withoutName(await missing.json(), "nowhere"));
    }
  });

  it("a network the caller may see is served, private ones included", async () => {
    expect((await rest("/api/v1/greeter/function")).status).toBe(200);
    expect((await rest("/api/v1/backroom/connectivity", alice)).status).toBe(200);
    const chat = await rest("/api/v1/relay/streaming_chat", bob, { user_message: { text: "hi" } });
    expect(chat.status).toBe(200);
    expect(await chat.text()).toContain("echo hi");
  });

  it("gRPC clients get NOT_FOUND with the same details for a hidden network as for a missing one", async () => {
    const agents = (token?: string) => createClient(AgentService, createGrpcTransport({ baseUrl: server.url, interceptors: token ? [bearer(token)] : [] }));
    const concierge = createClient(ConciergeService, createGrpcTransport({ baseUrl: server.url, interceptors: [bearer(bob)] }));
    expect((await concierge.list({})).agents.map((agent) => agent.agentName)).toEqual(["relay"]);

    const failure = async (call: Promise<unknown>) => {
      const error = ConnectError.from(await call.then(() => undefined, (thrown: unknown) => thrown));
      return { code: error.code, message: error.rawMessage, details: error.details.map((detail) => ("desc" in detail ? detail.desc.typeName : detail.type)) };
    };
    const hidden = await failure(agents(bob).function({ agentName: "greeter" }));
    expect(hidden.code).toBe(Code.NotFound);
    const missing = await failure(agents(bob).function({ agentName: "greetex" }));
    expect(hidden.message).toBe(missing.message);
    expect(hidden.details).toEqual(missing.details);
    expect(await failure(agents().connectivity({ agentName: "relay" }))).toMatchObject({ code: Code.NotFound, message: missing.message });
    const stream = agents(carol).streamingChat({ agentName: "greeter", userMessage: { text: "hi" } });
    expect(await failure((async () => { for await (const _ of stream); })())).toMatchObject({ code: Code.NotFound, message: missing.message });
  });

  it("MCP offers and runs only the networks the client may see", async () => {
    const connect = async (token: string) => {
      const client = new Client({ name: "axon-test", version: "1" });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
      return client;
    };
    const bobClient = await connect(bob);
    const aliceClient = await connect(alice);
    try {
      const networkTools = async (client: Client) => (await client.listTools()).tools.map((tool) => tool.name).filter((name) => ["greeter", "relay"].includes(name));
      expect(await networkTools(bobClient)).toEqual(["relay"]);
      expect(await networkTools(aliceClient)).toEqual(["greeter"]);
      const refused = (await bobClient.callTool({ name: "greeter", arguments: { text: "hi" } })) as CallToolResult;
      const unknown = (await bobClient.callTool({ name: "no_such_tool", arguments: { text: "hi" } })) as CallToolResult;
      expect(refused.isError).toBe(true);
      expect(refused.content).toEqual(unknown.content);
      const answered = (await bobClient.callTool({ name: "relay", arguments: { text: "hi" } })) as CallToolResult;
      expect(answered.isError ?? false).toBe(false);
    } finally {
      await bobClient.close();
      await aliceClient.close();
    }
  });

  it("an agent.chat operation on a hidden network is refused as one on a network that is not served", async () => {
    const api = operationsApi(server.url);
    const submit = (network: string, key: string) => api.post(bob, { idempotency_key: key, operation: "agent.chat", target: { network }, arguments: { text: "hi" }, reason: "test" });
    const hidden = await submit("greeter", "hidden-1");
    const missing = await submit("nowhere", "missing-1");
    expect(hidden.status).toBe(400);
    expect(hidden.body).toEqual(missing.body);
    const allowed = await submit("relay", "allowed-1");
    expect(allowed.status).toBe(202);
  });
});

describe("user_id metadata as an identity", () => {
  it("names the caller only when AXON_TRUST_USER_ID_METADATA says a trusted proxy sets it", async () => {
    const untrusting = await startServer();
    const trusting = await startServer({ AXON_TRUST_USER_ID_METADATA: "true" });
    try {
      const list = async (server: TestServer) =>
        ((await (await fetch(`${server.url}/api/v1/list`, { headers: { user_id: "bob" } })).json()) as Json).agents.map((agent: Json) => agent.agent_name);
      expect(await list(untrusting)).toEqual(["greeter"]);
      expect(await list(trusting)).toEqual(["relay"]);
    } finally {
      await untrusting.close();
      await trusting.close();
    }
  });
});

describe("without a network access file", () => {
  it("keeps every network open and says so once at start-up", async () => {
    const logLines: string[] = [];
    const server = await startTestServer({ env: fixtureEnv, chats: new ScriptedChats(), logLines });
    try {
      const agents = ((await (await fetch(`${server.url}/api/v1/list`)).json()) as Json).agents.map((agent: Json) => agent.agent_name);
      expect(agents).toEqual(["greeter", "relay"]);
      expect(logLines.filter((line) => line.includes("open to every caller"))).toHaveLength(1);
    } finally {
      await server.close();
    }
  });
});

/** An error body with the network's name taken out: what may differ between a hidden and a missing network. */
function withoutName(body: unknown, name: string): unknown {
  return JSON.parse(JSON.stringify(body).replaceAll(name, "<name>"));
}
