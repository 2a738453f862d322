import http2 from "node:http2";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fixtureEnv } from "../e2e/expectations.js";
import { envelope } from "../support/envelopes.js";
import { alice, operator, roomyAdmission, startUpstream, writeFiles } from "../support/operations.js";
import { ScriptedChats } from "../support/scripted-chat.js";
import { startTestServer, type TestServer } from "../support/server.js";

type Json = Record<string, any>;

/** What no error text may carry: stack frames, file paths, dependency folders. */
const LEAKS = [/at .*\.ts:\d+/, /\/work\//, /node_modules/, /\.ts:\d+/];

/** Arbitrary JSON values, nesting included, as any client could send them. */
const anyJson = fc.oneof(
  { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 6 }) },
  { weight: 1, arbitrary: fc.string({ maxLength: 20_000 }) },
  { weight: 1, arbitrary: fc.dictionary(fc.constantFrom("idempotency_key", "operation", "target", "arguments", "reason", "user_message", "sly_data", "chat_filter", "expected_revision", "minutes", "max_uses", "note"), fc.jsonValue({ maxDepth: 3 })) },
);


function expectWellFormed(status: number, text: string): void {
  expect(status, text).toBeLessThan(500);
  for (const leak of LEAKS) expect(text).not.toMatch(leak);
  if (status >= 400) {
    const body = JSON.parse(text) as Json;
    expect(typeof body.code, text).toBe("number");
    expect(typeof body.message, text).toBe("string");
  }
}

describe("hostile request bodies reach a real server", () => {
  let server: TestServer;
  let upstream: Awaited<ReturnType<typeof startUpstream>>;

  beforeAll(async () => {
    upstream = await startUpstream();
    server = await startTestServer({ env: { ...fixtureEnv, ...writeFiles(upstream.url, roomyAdmission) }, chats: new ScriptedChats() });
  });
  afterAll(async () => {
    await server?.close();
    upstream?.close();
  });

  const post = async (route: string, token: string | undefined, body: string) => {
    const response = await fetch(server.url + route, {
      method: "POST",
      headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), "content-type": "application/json" },
      body,
      // A chat text of exactly "hang" would wait for a cancel that never comes: fail rather than stall.
      signal: AbortSignal.timeout(4000),
    });
    return { status: response.status, text: await response.text() };
  };

  it.each([
    ["/api/v1/greeter/streaming_chat", undefined],
    ["/api/agent/v1/operations", alice],
    ["/api/operator/v1/requests/apr_0000000000/approve", operator],
  ] as const)("arbitrary JSON posted to %s is a google.rpc.Status or a success, never a 5xx", async (route, token) => {
    await fc.assert(
      fc.asyncProperty(anyJson, async (value) => {
        const { status, text } = await post(route, token, JSON.stringify(value));
        if (route.includes("streaming_chat") && status === 200) return; // a chat with whatever text it was given
        expectWellFormed(status, text);
      }),
      { numRuns: 60 },
    );
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  });

  it("text that is not JSON, or is truncated, is refused with 400", async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.string({ maxLength: 200 }), fc.jsonValue().map((v) => JSON.stringify(v).slice(0, -1))), async (text) => {
        const { status, text: answer } = await post("/api/agent/v1/operations", alice, text);
        expectWellFormed(status, answer);
      }),
      { numRuns: 60 },
    );
  });

  it("arbitrary strings as query parameters and idempotency keys are field violations or success, never 5xx", async () => {
    const hostile = fc.oneof(fc.string({ maxLength: 300 }), fc.string({ unit: "binary", maxLength: 50 }), fc.constantFrom("-1", "1e309", "NaN", "0x10", "9".repeat(40), "", " ", "%00", "null"));
    await fc.assert(
      fc.asyncProperty(hostile, fc.constantFrom("cursor", "limit", "wait_seconds", "after_revision", "page_size", "state"), async (value, name) => {
        const route = name === "wait_seconds" || name === "after_revision" ? "/api/agent/v1/operations/op_missing/events" : "/api/agent/v1/operations";
        const response = await fetch(`${server.url}${route}?${name}=${encodeURIComponent(value)}`, {
          headers: { authorization: `Bearer ${alice}` },
          signal: AbortSignal.timeout(4000),
        });
        const text = await response.text();
        expectWellFormed(response.status, text);
        if (response.status === 400) expect(JSON.stringify(JSON.parse(text).details)).toContain("BadRequest");
      }),
      { numRuns: 80 },
    );
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.string({ maxLength: 400 }), fc.jsonValue({ maxDepth: 2 })), async (key) => {
        const body = { idempotency_key: key, operation: "http.request", target: { credential: "upstream", path: "/x" }, arguments: { method: "GET" }, reason: "r" };
        const { status, text } = await post("/api/agent/v1/operations", alice, JSON.stringify(body));
        expectWellFormed(status, text);
      }),
      { numRuns: 60 },
    );
  });

  it("random bytes as a Connect binary unary request are refused without a crash", async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 2000 }), async (bytes) => {
        const response = await fetch(`${server.url}/axon.agent.v1.AgentOperationsService/GetOperation`, {
          method: "POST",
          headers: { authorization: `Bearer ${alice}`, "content-type": "application/proto", "connect-protocol-version": "1" },
          body: bytes,
        });
        const text = await response.text();
        for (const leak of LEAKS) expect(text).not.toMatch(leak);
        const { code, details } = JSON.parse(text) as Json;
        expect(response.status, text).toBeLessThan(500);
        expect(["invalid_argument", "not_found"]).toContain(code);
        // Bytes that do not decode are the caller's mistake, named as such.
        if (code === "invalid_argument") expect(details, text).toHaveLength(1);
      }),
      { numRuns: 80 },
    );
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  });

  it("random bytes as gRPC frames end with a gRPC status, not INTERNAL or UNKNOWN", async () => {
    const session = http2.connect(server.url);
    const call = (frame: Buffer) =>
      new Promise<{ status: string | undefined; message: string }>((resolve, reject) => {
        const stream = session.request({
          ":method": "POST",
          ":path": "/axon.agent.v1.AgentOperationsService/GetOperation",
          "content-type": "application/grpc",
          te: "trailers",
          authorization: `Bearer ${alice}`,
        });
        let headerStatus: string | undefined;
        stream.on("response", (headers) => (headerStatus = headers["grpc-status"] as string | undefined));
        stream.on("trailers", (trailers) => resolve({ status: trailers["grpc-status"] as string, message: decodeURIComponent(String(trailers["grpc-message"] ?? "")) }));
        stream.on("data", () => undefined);
        stream.on("end", () => resolve({ status: headerStatus, message: "" }));
        stream.on("error", reject);
        stream.end(frame);
      });
    try {
      await fc.assert(
        fc.asyncProperty(fc.uint8Array({ maxLength: 1000 }), fc.boolean(), async (bytes, honestLength) => {
          const { status, message } = await call(envelope(0, bytes, honestLength ? bytes.length : bytes.length + 7));
          // A frame shorter than its length prefix: connect-es answers UNIMPLEMENTED "protocol error: ...".
          if (!honestLength && /^protocol error: /.test(message)) {
            expect(["3", "12"]).toContain(status);
            return;
          }
          expect(["3", "5"], message).toContain(status);
          for (const leak of LEAKS) expect(message).not.toMatch(leak);
        }),
        { numRuns: 60 },
      );
    } finally {
      session.close();
    }
  });
});
