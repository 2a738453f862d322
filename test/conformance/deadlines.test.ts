import { create, fromBinary, fromJson, toBinary } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SubmitOperationRequestSchema, WaitOperationRequestSchema, WaitOperationResponseSchema, WatchOperationRequestSchema } from "../../src/gen/axon/agent/v1/agent_pb.js";
import { ChatRequestSchema } from "../../src/gen/neuro_san/api/grpc/agent_pb.js";
import { alice, httpOp, operationsApi, roomyAdmission, startUpstream, writeFiles } from "../support/operations.js";
import { ScriptedChats } from "../support/scripted-chat.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { until } from "../support/wait.js";
import { fixtureEnv } from "../e2e/expectations.js";
import { ConformanceClient, streamProtocols, unaryProtocols, type Protocol } from "./protocols.js";

// Deadlines (short, beyond what a timer holds, malformed: see messages.test.ts) and cancellation, before and after the
// request's end, on every protocol and path: connectrpc/conformance's "deadline" and "cancellation" suites, and
// PROTOCOL-HTTP2.md's grpc-timeout (up to 8 digits of hours) and RST_STREAM.
const service = "/axon.agent.v1.AgentOperationsService";
const chat = "/dev.cognizant_ai.neuro_san.api.grpc.agent.AgentService/StreamingChat";
const bearer = { authorization: `Bearer ${alice}` };
/** Past 2^31 ms, where a Node timer overflows and fires at once: 30 days, and Connect's 10 digits. */
const beyondTimers = (protocol: Protocol): Record<string, string> => (protocol.timeout(1)["grpc-timeout"] ? { "grpc-timeout": "720H" } : { "connect-timeout-ms": "9999999999" });

const chats = new ScriptedChats();
let server: TestServer;
let client: ConformanceClient;
let upstream: Awaited<ReturnType<typeof startUpstream>>;
let api: ReturnType<typeof operationsApi>;
const logLines: string[] = [];
beforeAll(async () => {
  upstream = await startUpstream();
  server = await startTestServer({ env: { ...fixtureEnv, ...writeFiles(upstream.url, roomyAdmission) }, chats, logLines });
  client = new ConformanceClient(server.url);
  api = operationsApi(server.url);
});
afterAll(async () => {
  client.close();
  await server.close();
  upstream.close();
});

/** An operation that stays pending (it awaits an operator's approval), and the revision it is at. */
async function pendingOperation(key: string): Promise<{ id: string; revision: number }> {
  const { status, body } = await api.post(alice, httpOp(key));
  expect(status).toBe(202);
  return { id: body.id, revision: body.revision };
}

const keyOf = (protocol: Protocol) => protocol.name.replaceAll("+", "plus-").replace(/\W+/g, "-");

function waitRequest(protocol: Protocol, id: string, afterRevision: number): Buffer {
  if (protocol.codec === "json") return Buffer.from(JSON.stringify({ id, after_revision: afterRevision, wait_seconds: 30 }));
  return Buffer.from(toBinary(WaitOperationRequestSchema, create(WaitOperationRequestSchema, { id, afterRevision, waitSeconds: 30 })));
}

function chatRequest(protocol: Protocol, text: string): Buffer {
  if (protocol.codec === "json") return Buffer.from(JSON.stringify({ agent_name: "greeter", user_message: { text } }));
  return Buffer.from(toBinary(ChatRequestSchema, create(ChatRequestSchema, { agentName: "greeter", userMessage: { text } })));
}

function stateOf(protocol: Protocol, message: Buffer): string {
  return protocol.codec === "json" ? JSON.parse(message.toString()).operation.state : fromBinary(WaitOperationResponseSchema, message).operation!.state;
}

describe.each(unaryProtocols)("a long poll over $name", (protocol) => {
  it("is DEADLINE_EXCEEDED when its deadline passes first", async () => {
    const operation = await pendingOperation(`short-${keyOf(protocol)}`);
    const outcome = await client.call(protocol, {
      path: `${service}/WaitOperation`,
      messages: [waitRequest(protocol, operation.id, operation.revision)],
      headers: { ...bearer, ...protocol.timeout(200) },
    });
    expect(outcome.code).toBe(Code.DeadlineExceeded);
  });

  it("honours a deadline beyond 2^31 ms: it answers the change it waited for", async () => {
    const operation = await pendingOperation(`long-${keyOf(protocol)}`);
    const waiting = client.call(protocol, {
      path: `${service}/WaitOperation`,
      messages: [waitRequest(protocol, operation.id, operation.revision)],
      headers: { ...bearer, ...beyondTimers(protocol) },
    });
    // Canceled before or after the wait began, the answer is the same: the operation as it is after the change.
    await api.call("POST", `/api/agent/v1/operations/${operation.id}/cancel`, alice, {});
    const outcome = await waiting;
    expect(outcome.code).toBe(0);
    expect(stateOf(protocol, outcome.messages[0]!)).toBe("canceled");
  });
});

describe("a long poll over REST", () => {
  it("is DEADLINE_EXCEEDED (504) when its deadline passes first", async () => {
    const operation = await pendingOperation("short-rest");
    const response = await fetch(`${server.url}/api/agent/v1/operations/${operation.id}/events?after_revision=${operation.revision}&wait_seconds=30`, {
      headers: { ...bearer, "connect-timeout-ms": "200" },
    });
    expect(response.status).toBe(504);
  });

  it("honours a deadline beyond 2^31 ms", async () => {
    const operation = await pendingOperation("long-rest");
    const waiting = fetch(`${server.url}/api/agent/v1/operations/${operation.id}/events?after_revision=${operation.revision}&wait_seconds=30`, {
      headers: { ...bearer, "connect-timeout-ms": "9999999999" },
    });
    await api.call("POST", `/api/agent/v1/operations/${operation.id}/cancel`, alice, {});
    const response = await waiting;
    expect({ status: response.status, state: ((await response.json()) as { state: string }).state }).toEqual({ status: 200, state: "canceled" });
  });
});

describe.each(streamProtocols)("a server stream over $name", (protocol) => {
  it("is DEADLINE_EXCEEDED when its deadline passes before it ends", async () => {
    const outcome = await client.call(protocol, { path: chat, messages: [chatRequest(protocol, "hang")], headers: protocol.timeout(200) });
    expect(outcome.code).toBe(Code.DeadlineExceeded);
  });

  it("is DEADLINE_EXCEEDED when its deadline passes while it waits for changes", async () => {
    const operation = await pendingOperation(`watch-${keyOf(protocol)}`);
    const request =
      protocol.codec === "json" ? Buffer.from(JSON.stringify({ id: operation.id })) : Buffer.from(toBinary(WatchOperationRequestSchema, create(WatchOperationRequestSchema, { id: operation.id })));
    const outcome = await client.call(protocol, { path: `${service}/WatchOperation`, messages: [request], headers: { ...bearer, ...protocol.timeout(300) } });
    expect(outcome.code).toBe(Code.DeadlineExceeded);
  });

  it("honours a deadline beyond 2^31 ms", async () => {
    const outcome = await client.call(protocol, { path: chat, messages: [chatRequest(protocol, "slow 1")], headers: beyondTimers(protocol) });
    expect(outcome.code).toBe(0);
  });
});

describe.each(unaryProtocols.filter((protocol) => protocol.wire === "h2"))("a call over $name reset before its request ended", (protocol) => {
  it("is never processed", async () => {
    const key = `reset-${keyOf(protocol)}`;
    const requestId = `conformance-${key}`;
    const request = httpOp(key);
    const message = protocol.codec === "json" ? Buffer.from(JSON.stringify(request)) : Buffer.from(toBinary(SubmitOperationRequestSchema, fromJson(SubmitOperationRequestSchema, request)));
    await client.call(protocol, { path: `${service}/SubmitOperation`, messages: [message], headers: { ...bearer, "x-request-id": requestId }, resetBeforeEnd: true });
    // The call's one log line says how it ended; by then anything it would have created exists.
    const line = await until(() => logLines.map((text) => JSON.parse(text) as Record<string, unknown>).find((entry) => entry.request_id === requestId && entry.msg === "request"), "the call's log line");
    expect(line.code).toBe("Canceled");
    const listed = await api.call("GET", `/api/agent/v1/operations?idempotency_key=${key}`, alice);
    expect(((await listed.json()) as { operations?: unknown[] }).operations ?? []).toEqual([]);
  });
});
