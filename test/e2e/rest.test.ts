import { restServices } from "../../src/server/descriptors.js";
import { compileRestRoutes } from "../../src/server/rest/http-rule.js";
import { openApiPath } from "../../src/server/rest/openapi.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ScriptedChats } from "../support/scripted-chat.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { expectedAgents, expectedGreeterFunction, expectedRelayConnectivity, fixtureEnv } from "./expectations.js";

let server: TestServer;
let chats: ScriptedChats;
beforeAll(async () => {
  chats = new ScriptedChats();
  server = await startTestServer({ env: { ...fixtureEnv, AGENT_ALLOW_CORS_HEADERS: "content-type, request_id" }, chats });
});
afterAll(() => server.close());

const get = (path: string, init?: RequestInit) => fetch(server.url + path, init);
const chat = (agent: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${server.url}/api/v1/${agent}/streaming_chat`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });

/** neuro-san's HTTP clients split the body on newlines and skip blank lines. */
async function jsonLines(response: Response): Promise<Record<string, any>[]> {
  const text = await response.text();
  return text.split("\n").filter((line) => line.trim() !== "").map((line) => JSON.parse(line));
}

async function expectStatus(response: Response, httpStatus: number, code: number, reason?: string) {
  expect(response.status).toBe(httpStatus);
  expect(response.headers.get("content-type")).toContain("application/json");
  const body: any = await response.json();
  expect(body.code).toBe(code);
  expect(typeof body.message).toBe("string");
  if (reason) {
    expect(body.details).toContainEqual(expect.objectContaining({ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason }));
  }
  expect(JSON.stringify(body)).not.toMatch(/\/work\/|node_modules|at .*\.ts:\d+/);
  return body;
}

describe("REST routes from the google.api.http rules", () => {
  it("GET /api/v1/list", async () => {
    const response = await get("/api/v1/list");
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ agents: expectedAgents });
  });

  it("GET /api/v1/{agent}/function", async () => {
    expect(await (await get("/api/v1/greeter/function")).json()).toEqual({ function: expectedGreeterFunction });
    // A network whose front man has no function block answers an empty function, as neuro-san's HTTP server does.
    expect(await (await get("/api/v1/relay/function")).json()).toEqual({ function: {} });
  });

  it("GET /api/v1/{agent}/connectivity", async () => {
    const body: any = await (await get("/api/v1/relay/connectivity")).json();
    // REST sends the leaves' empty tool lists, as neuro-san's HTTP server does.
    expect(body.connectivity_info).toEqual(expectedRelayConnectivity.map((info) => ({ ...info, tools: info.tools ?? [] })));
  });

  it("unknown agents are 404 with a google.rpc.Status on every route", async () => {
    await expectStatus(await get("/api/v1/nobody/function"), 404, 5, "AGENT_NOT_FOUND");
    await expectStatus(await get("/api/v1/nobody/connectivity"), 404, 5, "AGENT_NOT_FOUND");
    await expectStatus(await chat("nobody", { user_message: { text: "hi" } }), 404, 5, "AGENT_NOT_FOUND");
  });

  it("unknown routes are 404 with a google.rpc.Status", async () => {
    await expectStatus(await get("/api/v2/anything"), 404, 5, "ROUTE_NOT_FOUND");
    await expectStatus(await get("/api/v1/greeter/function/extra"), 404, 5);
  });
});

describe("POST /api/v1/{agent}/streaming_chat as neuro-san's json-lines stream", () => {
  it("MINIMAL answers one line with the final AGENT_FRAMEWORK message", async () => {
    const response = await chat("greeter", { user_message: { text: "hi" }, sly_data: { k: 1 } });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/json-lines");
    const lines = await jsonLines(response);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toEqual({
      response: {
        type: "AGENT_FRAMEWORK",
        text: "echo hi (turn 1)",
        sly_data: { k: 1 },
        chat_context: {
          chat_histories: [
            {
              origin: [{ tool: "Greeter", instantiation_index: 1 }],
              messages: [
                { type: "HUMAN", text: "hi", origin: [{ tool: "Greeter", instantiation_index: 1 }] },
                { type: "AI", text: "echo hi (turn 1)", origin: [{ tool: "Greeter", instantiation_index: 1 }] },
              ],
            },
          ],
        },
      },
    });
  });

  it("MAXIMAL streams every message with content, echoing the request, one flushed line each", async () => {
    const response = await chat("greeter", { user_message: { text: "slow 3" }, chat_filter: { chat_filter_type: "maximal" } });
    expect(response.status).toBe(200);
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    const arrivals: number[] = [];
    let buffered = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffered += value;
      arrivals.push(performance.now());
    }
    const lines = buffered.split("\n").filter(Boolean).map((line) => JSON.parse(line));
    expect(lines.map((line) => line.response.type)).toEqual(["AGENT", "AI", "AGENT_PROGRESS", "AGENT_PROGRESS", "AGENT_PROGRESS", "AGENT_FRAMEWORK"]);
    expect(lines.every((line) => line.request?.user_message?.text === "slow 3")).toBe(true);
    // Progress lines 100 ms apart arrive as separate chunks: nothing waits for the end of the chat.
    expect(arrivals.length).toBeGreaterThanOrEqual(4);
  });

  it("a second turn carries the chat_context of the first", async () => {
    const [first] = await jsonLines(await chat("greeter", { user_message: { text: "one" } }));
    const [second] = await jsonLines(
      await chat("greeter", { user_message: { text: "two" }, chat_context: first!.response.chat_context }),
    );
    expect(second!.response.text).toBe("echo two (turn 2)");
  });

  it("parses requests leniently, as neuro-san did", async () => {
    for (const filter of ["MAXIMAL", "Maximal", 2]) {
      const lines = await jsonLines(
        await chat("greeter", { user_message: { text: "x", type: "whatever" }, chat_filter: { chat_filter_type: filter }, unknown: 1 }),
      );
      expect(lines.length).toBeGreaterThan(1);
    }
    for (const filter of ["garbage", 0, 1, "minimal", 99]) {
      const lines = await jsonLines(await chat("greeter", { user_message: { text: "x", type: 2 }, chat_filter: { chat_filter_type: filter } }));
      expect(lines).toHaveLength(1);
    }
  });

  it("an error before the chat starts is a plain HTTP error", async () => {
    await expectStatus(await chat("greeter", { user_message: { text: "refuse" } }), 400, 9, "SCRIPTED_REFUSAL");
  });

  it("an error after the stream started is one more line holding a google.rpc.Status", async () => {
    const response = await chat("greeter", { user_message: { text: "fail midway" }, chat_filter: { chat_filter_type: "MAXIMAL" } });
    expect(response.status).toBe(200);
    const lines = await jsonLines(response);
    expect(lines.slice(0, -1).map((line) => line.response.type)).toEqual(["AGENT", "AI"]);
    expect(lines.at(-1)).toMatchObject({
      code: 14,
      details: [expect.objectContaining({ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "SCRIPTED_FAILURE" })],
    });
  });

  it("closing the connection cancels the chat", async () => {
    const before = chats.cancelled.length;
    const abort = new AbortController();
    const response = await fetch(`${server.url}/api/v1/greeter/streaming_chat`, {
      method: "POST",
      body: JSON.stringify({ user_message: { text: "hang" }, chat_filter: { chat_filter_type: "MAXIMAL" } }),
      signal: abort.signal,
    });
    const reader = response.body!.getReader();
    await reader.read();
    abort.abort();
    await chats.whenCancelled(before + 1);
  });

  it("copies the forwarded metadata headers into the chat", async () => {
    await jsonLines(await chat("greeter", { user_message: { text: "meta" } }, { request_id: "req-42", user_id: "ada" }));
    expect(chats.turns.at(-1)?.metadata).toEqual({ request_id: "req-42", user_id: "ada" });
    await jsonLines(await chat("greeter", { user_message: { text: "meta" } }));
    expect(chats.turns.at(-1)?.metadata.request_id).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe("bad input gets a clear google.rpc.Status and no crash", () => {
  it("malformed JSON is INVALID_ARGUMENT", async () => {
    await expectStatus(await chat("greeter", "{not json"), 400, 3);
  });

  it("wrong types are INVALID_ARGUMENT naming the field", async () => {
    const body = await expectStatus(await chat("greeter", { user_message: { text: 123 } }), 400, 3);
    const badRequest = body.details.find((d: any) => d["@type"] === "type.googleapis.com/google.rpc.BadRequest");
    expect(badRequest.fieldViolations).toEqual([{ field: "user_message.text", description: expect.any(String) }]);
    await expectStatus(await chat("greeter", { sly_data: "not an object" }), 400, 3);
    await expectStatus(await chat("greeter", []), 400, 3);
  });

  it("a huge body is refused before it is read whole", async () => {
    const huge = JSON.stringify({ user_message: { text: "x".repeat(5 * 1024 * 1024) } });
    const response = await chat("greeter", huge);
    expect(response.status).toBe(413);
    expect(((await response.json()) as any).code).toBe(8);
  });

  it("huge headers are refused", async () => {
    const response = await get("/api/v1/list", { headers: { "x-big": "y".repeat(64 * 1024) } });
    expect(response.status).toBe(431);
  });

  it("the server still answers after all of that", async () => {
    expect((await get("/api/v1/list")).status).toBe(200);
  });
});

describe("plain HTTP routes", () => {
  it("health endpoints", async () => {
    expect((await get("/healthz")).status).toBe(200);
    expect((await get("/livez")).status).toBe(200);
    expect((await get("/readyz")).status).toBe(200);
  });

  it("/metrics counts requests by route, protocol and code, with latency and streams in flight", async () => {
    await get("/api/v1/list");
    await get("/api/v1/nobody/function");
    const text = await (await get("/metrics")).text();
    expect(text).toMatch(/axon_requests_total\{route="\/dev.cognizant_ai.neuro_san.api.grpc.concierge.ConciergeService\/List",protocol="rest",code="OK"\} \d+/);
    expect(text).toMatch(/axon_requests_total\{route="[^"]*AgentService\/Function",protocol="rest",code="NotFound"\} \d+/);
    expect(text).toContain("axon_request_duration_seconds_bucket");
    expect(text).toContain("axon_streams_in_flight");
  });

  it("/api/v1/docs is an OpenAPI document covering every REST route", async () => {
    const doc: any = await (await get("/api/v1/docs")).json();
    expect(doc.openapi).toMatch(/^3\./);
    // Every REST route the transcoder serves, and nothing else.
    const served = compileRestRoutes(restServices).map((route) => openApiPath(route.pathTemplate));
    expect(Object.keys(doc.paths).sort()).toEqual([...new Set(served)].sort());
    expect(doc.paths["/api/v1/{agent_name}/streaming_chat"].post).toBeDefined();
  });

  it("CORS when AGENT_ALLOW_CORS_HEADERS is set", async () => {
    const preflight = await get("/api/v1/list", { method: "OPTIONS" });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe("*");
    expect(preflight.headers.get("access-control-allow-methods")).toBe("GET, POST, OPTIONS");
    expect((await get("/api/v1/list")).headers.get("access-control-allow-origin")).toBe("*");
  });
});
