import http from "node:http";
import http2 from "node:http2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { maxJsonDepth } from "../../src/operations/json-safety.js";
import { fixtureEnv } from "../e2e/expectations.js";
import { alice, roomyAdmission, startUpstream, writeFiles } from "../support/operations.js";
import { createPostgresDatabase, type TestDatabase } from "../support/postgres-database.js";
import { ScriptedChats } from "../support/scripted-chat.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { within } from "../support/wait.js";

type Json = Record<string, any>;

const policy = { rules: [{ id: "all", effect: "allow", operations: ["agent.chat", "http.request"] }] };

/** What no answer may carry: stack frames, file paths, dependency folders. */
const LEAKS = [/at .*\.ts:\d+/, /\/work\//, /node_modules/, /\.ts:\d+/];

/** JSON text of `levels` objects inside each other, `{"a":{"a":...}}`: built as text, as no client could stringify it. */
const deepObject = (levels: number) => `${'{"a":'.repeat(levels)}1${"}".repeat(levels)}`;
const deepArray = (levels: number) => `${"[".repeat(levels)}${"]".repeat(levels)}`;

const toolCall = (name: string, argumentsJson: string, extraParams = "") =>
  `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"${name}","arguments":${argumentsJson}${extraParams}}}`;

describe.each(["sqlite", "postgresql"] as const)("hostile MCP input on %s", (provider) => {
  let server: TestServer;
  let database: TestDatabase | undefined;
  let upstream: Awaited<ReturnType<typeof startUpstream>>;

  beforeAll(async () => {
    upstream = await startUpstream();
    database = provider === "postgresql" ? await createPostgresDatabase() : undefined;
    const env = { ...fixtureEnv, ...writeFiles(upstream.url, roomyAdmission, policy), ...(database ? { DATABASE_URL: database.url } : {}) };
    server = await startTestServer({ env, chats: new ScriptedChats() });
  });
  afterAll(async () => {
    await server?.close();
    await database?.drop();
    upstream?.close();
  });

  /** A raw POST to /mcp over HTTP/1.1, with whatever Host header the test names; a null token sends none. */
  function post(body: string, options: { host?: string; token?: string | null } = {}): Promise<{ status: number; text: string }> {
    const { host = `127.0.0.1:${server.port}`, token = alice } = options;
    return new Promise((resolve, reject) => {
      const request = http.request(
        {
          host: "127.0.0.1",
          port: server.port,
          path: "/mcp",
          method: "POST",
          setHost: false,
          headers: {
            host,
            "content-type": "application/json",
            accept: "application/json",
            ...(token ? { authorization: `Bearer ${token}` } : {}),
          },
        },
        (response) => {
          let text = "";
          response.setEncoding("utf8");
          response.on("data", (chunk: string) => (text += chunk));
          response.on("end", () => resolve({ status: response.statusCode!, text }));
        },
      );
      request.on("error", reject);
      request.end(body);
    });
  }

  /** The JSON-RPC answer to a body, within a bound: a request that hangs fails here. */
  async function rpc(body: string, options?: { host?: string }): Promise<Json> {
    const { status, text } = await within(10_000, post(body, options), "the MCP answer");
    expect(status, text).toBe(200);
    for (const leak of LEAKS) expect(text).not.toMatch(leak);
    return JSON.parse(text) as Json;
  }

  /** The error JSON of a tool call that failed as a tool result (spec §9). */
  async function toolError(body: string): Promise<Json> {
    const answer = await rpc(body);
    expect(answer.result?.isError, JSON.stringify(answer)).toBe(true);
    return JSON.parse(answer.result.content[0].text) as Json;
  }

  /** What operation_list says of a request_id: empty when nothing was stored. */
  async function storedUnder(requestId: string): Promise<Json[]> {
    const answer = await rpc(toolCall("operation_list", JSON.stringify({ request_id: requestId })));
    return answer.result.structuredContent.operations as Json[];
  }

  const healthy = async () => expect((await fetch(`${server.url}/healthz`)).status).toBe(200);

  describe("the Host header", () => {
    it.each(["[", "a b", "x:99999", "evil.example/elsewhere?", "[::1", ""])("%j is no reason to fail: the call is served", async (host) => {
      const answer = await rpc(toolCall("operation_list", "{}"), { host });
      expect(answer.result.structuredContent).toMatchObject({ api_version: "unyolo.io/mcp-operation-page/v1", operations: expect.any(Array) });
    });

    // (An :authority with a space never reaches Axon: nghttp2 resets the stream as a protocol error.)
    it.each(["[", "x:99999"])("%j as the HTTP/2 :authority is no reason to fail either", async (authority) => {
      const session = http2.connect(server.url);
      try {
        const answer = await within(
          10_000,
          new Promise<{ status: number; text: string }>((resolve, reject) => {
            const stream = session.request({
              ":method": "POST",
              ":path": "/mcp",
              ":authority": authority,
              "content-type": "application/json",
              accept: "application/json",
              authorization: `Bearer ${alice}`,
            });
            let status = 0;
            let text = "";
            stream.setEncoding("utf8");
            stream.on("response", (headers) => (status = Number(headers[":status"])));
            stream.on("data", (chunk: string) => (text += chunk));
            stream.on("end", () => resolve({ status, text }));
            stream.on("error", reject);
            stream.end(toolCall("operation_list", "{}"));
          }),
          "the HTTP/2 answer",
        );
        expect(answer.status, answer.text).toBe(200);
        expect(JSON.parse(answer.text).result.structuredContent.operations).toEqual(expect.any(Array));
      } finally {
        session.close();
      }
    });

    it("does not come before authentication: a token that names no client is 401 as a google.rpc.Status", async () => {
      const { status, text } = await post(toolCall("operation_list", "{}"), { host: "[", token: "not-a-client-secret" });
      expect(status).toBe(401);
      expect(JSON.parse(text)).toMatchObject({ code: 16, details: [{ reason: "UNAUTHENTICATED", metadata: { category: "authentication" } }] });
    });
  });

  describe("nesting", () => {
    const tooDeep = (field: string) => ({
      code: "invalid_argument",
      message: expect.any(String),
      field_violations: [{ field, description: `nests deeper than ${maxJsonDepth} levels` }],
    });

    it("agent_chat sly_data nested 100,000 deep is a tool error naming where it goes too deep, and nothing is stored", async () => {
      const args = `{"target":{"network":"greeter"},"reason":"deep","request_id":"deep-sly","arguments":{"text":"hi","sly_data":${deepObject(100_000)}}}`;
      expect(await toolError(toolCall("agent_chat", args))).toEqual(tooDeep(`arguments.sly_data${".a".repeat(maxJsonDepth - 1)}`));
      expect(await storedUnder("deep-sly")).toEqual([]);
      await healthy();
    });

    it("an http_request target nested 100,000 deep is refused the same way", async () => {
      const args = `{"target":${deepObject(100_000)},"reason":"deep","request_id":"deep-target","arguments":{"method":"GET"}}`;
      expect(await toolError(toolCall("http_request", args))).toEqual(tooDeep(`target${".a".repeat(maxJsonDepth)}`));
      expect(await storedUnder("deep-target")).toEqual([]);
    });

    it("a network tool's sly_data nested 100,000 deep is refused before the chat starts, not left hanging", async () => {
      const args = `{"text":"hi","sly_data":{"list":${deepArray(100_000)}}}`;
      expect(await toolError(toolCall("greeter", args))).toEqual(tooDeep(`sly_data.list${"[0]".repeat(maxJsonDepth - 1)}`));
    });

    it("a scalar field given as 100,000 nested arrays is refused the same way", async () => {
      expect(await toolError(toolCall("operation_get", `{"operation_id":${deepArray(100_000)}}`))).toEqual(tooDeep(`operation_id${"[0]".repeat(maxJsonDepth)}`));
    });

    it(`${maxJsonDepth} levels in one argument are accepted`, async () => {
      const args = `{"target":{"network":"greeter"},"reason":"just deep enough","request_id":"deep-enough","arguments":{"text":"hi","sly_data":{"a":${deepArray(maxJsonDepth - 2)}}}}`;
      const answer = await rpc(toolCall("agent_chat", args));
      expect(answer.result.isError ?? false, JSON.stringify(answer)).toBe(false);
      expect(await storedUnder("deep-enough")).toHaveLength(1);
    });

    it("deep JSON elsewhere in a JSON-RPC message is answered, and the server keeps serving", async () => {
      const deepMeta = await rpc(toolCall("operation_list", "{}", `,"_meta":{"x":${deepObject(100_000)}}`));
      expect(deepMeta.result.structuredContent.operations).toEqual(expect.any(Array));
      const deepParams = await rpc(`{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{"x":${deepArray(100_000)}}}`);
      expect(deepParams.result.tools.length).toBeGreaterThan(0);
      await healthy();
    });
  });

  describe("values the database cannot store", () => {
    // JSON.stringify can write neither 1e400 nor an own `__proto__` key: those two rows put them into the text.
    const chat = (requestId: string, replace: Json) =>
      JSON.stringify({ target: { network: "greeter" }, reason: "hostile", request_id: requestId, arguments: { text: "hi" }, ...replace });

    it.each([
      ["NUL in the text", "nul-text", chat("nul-text", { arguments: { text: "a\u0000b" } }), "arguments.text", "may not contain NUL characters"],
      ["NUL in a sly_data key", "nul-key", chat("nul-key", { arguments: { text: "hi", sly_data: { "a\u0000": 1 } } }), "arguments.sly_data.a", "key may not contain NUL characters"],
      ["NUL in the reason", "nul-reason", chat("nul-reason", { reason: "why\u0000" }), "reason", "may not contain NUL characters"],
      ["an unpaired surrogate in the target", "surrogate", chat("surrogate", { target: { network: "\ud800" } }), "target.network", "must be well-formed Unicode (it has an unpaired surrogate)"],
      ["1e400 (Infinity) in sly_data", "infinity", chat("infinity", { arguments: { text: "hi", sly_data: { n: "@1e400" } } }).replace('"@1e400"', "1e400"), "arguments.sly_data.n", "must be a finite number"],
      ["a __proto__ key in sly_data", "proto-sly", chat("proto-sly", { arguments: { text: "hi", sly_data: { "@proto": 1 } } }).replace('"@proto"', '"__proto__"'), "arguments.sly_data.__proto__", "is a key the store would drop: rename it"],
    ])("%s is a tool error naming the field, and nothing is stored", async (_name, requestId, args, field, description) => {
      expect(await toolError(toolCall("agent_chat", args))).toEqual({ code: "invalid_argument", message: expect.any(String), field_violations: [{ field, description }] });
      expect(await storedUnder(requestId)).toEqual([]);
    });

    it("a __proto__ query key is refused by name rather than dropped on the way to the database", async () => {
      const args = `{"target":{"credential":"upstream","path":"/things"},"reason":"proto","request_id":"proto-key","arguments":{"method":"GET","query":{"page":"1","__proto__":"x"}}}`;
      expect(await toolError(toolCall("http_request", args))).toMatchObject({ code: "invalid_argument", field_violations: [{ field: "arguments.query.__proto__" }] });
      expect(await storedUnder("proto-key")).toEqual([]);
      expect(upstream.received).toHaveLength(0);
    });

    it("NUL in an operation id is refused before it reaches a database query", async () => {
      expect(await toolError(toolCall("operation_get", JSON.stringify({ operation_id: "op_\u0000" })))).toMatchObject({
        code: "invalid_argument",
        field_violations: [{ field: "operation_id", description: "may not contain NUL characters" }],
      });
    });
  });
});
