import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fixtureEnv } from "../e2e/expectations.js";
import { bob, carol, operator, roomyAdmission, startUpstream, writeFiles } from "../support/operations.js";
import { createPostgresDatabase, type TestDatabase } from "../support/postgres-database.js";
import { ScriptedChats } from "../support/scripted-chat.js";
import { startTestServer, type TestServer } from "../support/server.js";

type Json = Record<string, any>;

/** What no answer may carry: stack frames, file paths, dependency folders. */
const LEAKS = [/at .*\.ts:\d+/, /\/work\//, /node_modules/, /\.ts:\d+/];

/** Strings a database or a parser may choke on: NUL, lone surrogates, controls, long text, keys of the prototype. */
const hostileString = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: "binary", maxLength: 40 }),
  { weight: 2, arbitrary: fc.constantFrom("\u0000", "a\u0000b", "\ud800", "x\udfffy", "__proto__", "constructor", "", " ", "%00", "../..", "\u202e") },
);

/** NUL or a lone surrogate, as JSON.stringify escapes them: no database keeps these as sent, so neither may Axon. */
const unstorableEscape = /\\u(0000|d[89a-f][0-9a-f]{2})/i;

/** Any JSON value, with hostile strings in keys and values. */
const hostileJson: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    hostileString,
    fc.double(),
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(hostileString, tie("value"), { maxKeys: 4 }),
  ),
})).value;

/** Fields of the strict bodies, right and wrong ones, with any values: most bodies are near-misses of a valid one. */
const bodyFields = fc.dictionary(
  fc.oneof(
    fc.constantFrom("idempotency_key", "operation", "target", "arguments", "reason", "expected_revision", "minutes", "max_uses", "idempotency_key", "constraints"),
    hostileString,
  ),
  hostileJson,
  { maxKeys: 6 },
);

/** A valid submission of either type, then one part of it made hostile: most bodies are near-misses of a valid one. */
const nearSubmission = fc
  .tuple(
    fc.constantFrom<Json>(
      { operation: "http.request", target: { credential: "upstream", path: "/things" }, arguments: { method: "GET" }, reason: "because" },
      { operation: "agent.chat", target: { network: "greeter" }, arguments: { text: "hi" }, reason: "because" },
    ),
    fc.oneof(
      hostileString.map((reason) => ({ reason })),
      fc.tuple(hostileString, hostileString).map(([name, value]) => ({ arguments: { method: "GET", query: { [name]: value } } })),
      hostileJson.map((sly_data) => ({ operation: "agent.chat", target: { network: "greeter" }, arguments: { text: "hi", sly_data } })),
      fc.tuple(hostileString, hostileJson).map(([name, value]) => ({ target: { network: "greeter", [name]: value } })),
      hostileJson.map((value) => ({ target: value })),
      hostileJson.map((value) => ({ arguments: value })),
      hostileString.map((idempotency_key) => ({ idempotency_key })),
      bodyFields,
    ),
  )
  .map(([valid, hostile]): Json => ({ ...valid, ...hostile }));

/** JSON text as no client library writes it: a number beyond a double, a key given twice, data after the value. */
const textMutation = fc.constantFrom<(text: string) => string>(
  (text) => text,
  (text) => text.replace(/(-?\d+(\.\d+)?)(?=[,}\]])/, "1e400"),
  (text) => text.replace(/^\{/, '{"reason":"x",'),
  (text) => `${text} {}`,
  (text) => text.slice(0, Math.max(1, text.length - 1)),
);

/** The status must be a success or a client error, in the protocol's error shape, without leaks. */
function expectWellFormed(status: number, text: string, protocol: "rest" | "connect"): void {
  expect(status, text).toBeLessThan(500);
  for (const leak of LEAKS) expect(text).not.toMatch(leak);
  if (status < 400) return;
  const body = JSON.parse(text) as Json;
  if (protocol === "rest") {
    expect(typeof body.code, text).toBe("number");
    expect(body.details?.[0]?.metadata?.code, text).toEqual(expect.any(String));
  } else {
    expect(typeof body.code, text).toBe("string");
    expect(body.details?.[0]?.debug?.metadata?.code, text).toEqual(expect.any(String));
  }
}

describe.each(["sqlite", "postgresql"] as const)("hostile Agent V1, Operator V1 and MCP bodies on %s", (provider) => {
  let server: TestServer;
  let database: TestDatabase | undefined;
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  /** What the successful answers created: every row of carol's must be one of these. */
  const created = new Set<string>();
  let submissions = 0;

  beforeAll(async () => {
    upstream = await startUpstream();
    database = provider === "postgresql" ? await createPostgresDatabase() : undefined;
    const env = { ...fixtureEnv, ...writeFiles(upstream.url, roomyAdmission), ...(database ? { DATABASE_URL: database.url } : {}) };
    server = await startTestServer({ env, chats: new ScriptedChats() });
  });
  afterAll(async () => {
    await server?.close();
    await database?.drop();
    upstream?.close();
  });

  const send = async (path: string, token: string, text: string, headers: Record<string, string> = {}) => {
    const response = await fetch(server.url + path, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...headers },
      body: text,
      signal: AbortSignal.timeout(8000),
    });
    return { status: response.status, text: await response.text() };
  };

  /** Nothing half-written: every operation and approval of carol's came from an answer that said so, and they link up. */
  async function expectNothingHalfWritten(): Promise<void> {
    const prisma = server.operations.database.prisma;
    const operations = await prisma.operation.findMany({ where: { clientId: "carol" } });
    for (const operation of operations) expect(created, operation.id).toContain(operation.id);
    const grants = await prisma.grant.findMany({ where: { clientId: "carol" } });
    for (const grant of grants) expect(operations.map((operation) => operation.id)).toContain(grant.operationId);
    for (const operation of operations.filter((row) => row.state === "pending")) {
      expect(grants.filter((grant) => grant.operationId === operation.id)).toHaveLength(1);
    }
  }

  it("any submission body, on REST and Connect JSON, is a success or a 4xx google.rpc.Status, and nothing is half-written", async () => {
    await fc.assert(
      fc.asyncProperty(nearSubmission, textMutation, fc.constantFrom("rest", "connect"), async (body, mutate, protocol) => {
        const text = mutate(JSON.stringify({ idempotency_key: `prop-${provider}-${++submissions}`, ...body }));
        const path = protocol === "rest" ? "/api/agent/v1/operations" : "/axon.agent.v1.AgentOperationsService/SubmitOperation";
        const { status, text: answer } = await send(path, carol, text);
        expectWellFormed(status, answer, protocol);
        // The same answer on both databases: refused before either sees it.
        if (unstorableEscape.test(text)) expect(status, `${text}\n${answer}`).toBe(400);
        if (status < 300) {
          const operation = (protocol === "rest" ? JSON.parse(answer) : JSON.parse(answer).operation) as Json;
          created.add(operation.id);
        }
      }),
      { numRuns: 70 },
    );
    await expectNothingHalfWritten();
  });

  it("any operator decision body, on REST and Connect JSON, is a success or a 4xx google.rpc.Status, and decides at most once", async () => {
    const submitted = await send("/api/agent/v1/operations", bob, JSON.stringify({ idempotency_key: `decide-${provider}`, operation: "http.request", target: { credential: "upstream", path: "/x" }, arguments: { method: "GET" }, reason: "r" }));
    const requestId = (JSON.parse(submitted.text) as Json).approval_id as string;
    const decisions: Json[] = [];
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom("approve", "deny", "revoke"),
        fc.oneof(bodyFields, fc.record({ expected_revision: fc.integer({ min: -1, max: 3 }), constraints: hostileJson, idempotency_key: hostileString })),
        textMutation,
        fc.constantFrom("rest", "connect"),
        async (action, body, mutate, protocol) => {
          const rest = protocol === "rest";
          const text = mutate(JSON.stringify(rest ? body : { ...body, id: requestId }));
          const method = `${action[0]!.toUpperCase()}${action.slice(1)}Request`;
          const path = rest ? `/api/operator/v1/requests/${requestId}/${action}` : `/axon.operator.v1.OperatorService/${method}`;
          const { status, text: answer } = await send(path, operator, text);
          expectWellFormed(status, answer, protocol);
          if (status < 300) decisions.push({ action, status: (rest ? JSON.parse(answer) : JSON.parse(answer).request).status });
        },
      ),
      { numRuns: 70 },
    );
    const request = (await (await fetch(`${server.url}/api/operator/v1/requests/${requestId}`, { headers: { authorization: `Bearer ${operator}` } })).json()) as Json;
    // Each decision moved the revision once; nothing else did.
    const changes = new Set(decisions.map((decision) => decision.action)).size;
    expect(request.revision).toBeLessThanOrEqual(1 + changes);
    if (decisions.length === 0) expect(request).toMatchObject({ status: "pending", revision: 1 });
  });

  it("any MCP tool call, with any arguments, is a JSON-RPC answer over 200 or a 4xx, never a 5xx", async () => {
    const toolArguments = fc.oneof(
      nearSubmission.map(({ idempotency_key, target, arguments: args, reason }) => ({ request_id: idempotency_key ?? `mcp-${provider}-${++submissions}`, target, arguments: args, reason })),
      bodyFields,
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom("agent_chat", "http_request", "operation_get", "operation_list", "operation_wait", "operation_cancel"), toolArguments, async (tool, args) => {
        const callArguments = tool === "operation_wait" ? { ...args, timeout_seconds: 0 } : args;
        const text = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: tool, arguments: callArguments } });
        const { status, text: answer } = await send("/mcp", carol, text, { accept: "application/json" });
        expect(status, answer).toBeLessThan(500);
        for (const leak of LEAKS) expect(answer).not.toMatch(leak);
        if (status === 200) {
          const rpc = JSON.parse(answer) as Json;
          expect(rpc.result ?? rpc.error, answer).toBeDefined();
          const id = rpc.result?.structuredContent?.id;
          if (typeof id === "string" && (tool === "agent_chat" || tool === "http_request")) created.add(id);
        }
      }),
      { numRuns: 60 },
    );
    await expectNothingHalfWritten();
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  });
});
