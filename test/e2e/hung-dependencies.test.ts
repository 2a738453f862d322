import * as grpc from "@grpc/grpc-js";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ErrorInfoSchema } from "../../src/gen/google/rpc/error_details_pb.js";
import { AgentService } from "../../src/gen/neuro_san/api/grpc/agent_pb.js";
import { ErrorInfo } from "../gen/google/rpc/error_details.js";
import { Status } from "../gen/google/rpc/status.js";
import { AgentServiceClient, type ChatResponse } from "../gen/neuro_san/api/grpc/agent.js";
import { ConciergeServiceClient, type ConciergeResponse } from "../gen/neuro_san/api/grpc/concierge.js";
import { alice, operationsApi, roomyAdmission, startUpstream, writeFiles } from "../support/operations.js";
import { defaultReply, ScriptedLlm } from "../support/scripted-llm/scripted-llm.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { within } from "../support/wait.js";

// Issue 7: a slow or hung LLM or upstream. Deadlines hold under load, every stream ends with a clear status, the server
// keeps answering meanwhile, and nothing is left hanging on the dependency's side afterwards.

type Json = Record<string, any>;

/** How a stream ended: code 0 with the final answer, or a google.rpc code with the ErrorInfo the client could read. */
interface Ending {
  code: number;
  answer?: string;
  errorInfo?: { reason: string; metadata: Record<string, string> };
}

/** One protocol's StreamingChat, run to its end. `deadlineMs` is the client's own deadline, sent as the protocol sends it. */
type Chat = (network: string, text: string, deadlineMs?: number) => Promise<Ending>;

let llm: ScriptedLlm;
let upstream: Awaited<ReturnType<typeof startUpstream>>;
let server: TestServer;
let grpcAgents: AgentServiceClient;
let grpcConcierge: ConciergeServiceClient;

/** REST json-lines; a deadline goes as `connect-timeout-ms`, which the transcoder passes on, and the client keeps reading. */
const restChat: Chat = async (network, text, deadlineMs) => {
  const response = await fetch(`${server.url}/api/v1/${network}/streaming_chat`, {
    method: "POST",
    headers: deadlineMs === undefined ? {} : { "connect-timeout-ms": String(deadlineMs) },
    body: JSON.stringify({ user_message: { text } }),
  });
  const lines: Json[] = (await response.text()).split("\n").filter(Boolean).map((line) => JSON.parse(line));
  const last = lines.at(-1)!;
  // An error after the 200 is one more line holding a google.rpc.Status.
  if (last.response) return { code: 0, answer: last.response.text };
  const info = last.details?.find((detail: Json) => detail["@type"] === "type.googleapis.com/google.rpc.ErrorInfo");
  return { code: last.code, ...(info ? { errorInfo: { reason: info.reason, metadata: info.metadata } } : {}) };
};

/** connect-es clients: the deadline is `timeoutMs` (grpc-timeout or connect-timeout-ms on the wire). */
function connectChat(makeTransport: (baseUrl: string) => Transport): Chat {
  return async (network, text, deadlineMs) => {
    const client = createClient(AgentService, makeTransport(server.url));
    let answer = "";
    try {
      for await (const response of client.streamingChat({ agentName: network, userMessage: { text } }, { timeoutMs: deadlineMs })) {
        answer = response.response?.text ?? answer;
      }
      return { code: 0, answer };
    } catch (caught) {
      const error = ConnectError.from(caught);
      const info = error.findDetails(ErrorInfoSchema)[0];
      return { code: error.code, ...(info ? { errorInfo: { reason: info.reason, metadata: info.metadata } } : {}) };
    }
  };
}

/** @grpc/grpc-js with ts-proto stubs: the deadline is the call's `deadline`; the Status comes from grpc-status-details-bin. */
const grpcJsChat: Chat = (network, text, deadlineMs) =>
  new Promise((resolve) => {
    let answer = "";
    const call = grpcAgents.streamingChat(
      { agent_name: network, user_message: { type: 0, text, mime_data: [], origin: [], tool_result_origin: [] } },
      deadlineMs === undefined ? {} : { deadline: Date.now() + deadlineMs },
    );
    call.on("data", (response: ChatResponse) => (answer = response.response?.text ?? answer));
    call.on("end", () => resolve({ code: 0, answer }));
    call.on("error", (error: grpc.ServiceError) => {
      const [raw] = error.metadata.get("grpc-status-details-bin");
      const details = raw === undefined ? [] : Status.decode(raw as Buffer).details;
      const any = details.find((detail) => detail.type_url === "type.googleapis.com/google.rpc.ErrorInfo");
      const info = any && ErrorInfo.decode(any.value);
      resolve({ code: error.code, ...(info ? { errorInfo: { reason: info.reason, metadata: info.metadata } } : {}) });
    });
  });

const protocols: [string, Chat][] = [
  ["REST json-lines", restChat],
  ["Connect over HTTP/1.1", connectChat((baseUrl) => createConnectTransport({ baseUrl, httpVersion: "1.1" }))],
  ["gRPC (connect-es)", connectChat((baseUrl) => createGrpcTransport({ baseUrl }))],
  ["gRPC (grpc-js)", grpcJsChat],
];

/** `perProtocol` streams on each protocol at once; each result is labelled with its protocol. */
function concurrentChats(perProtocol: number, network: string, deadlineMs?: number) {
  return Promise.all(
    protocols.flatMap(([name, chat]) =>
      Array.from({ length: perProtocol }, async (_, i) => ({ protocol: name, ...(await chat(network, `${name} ${i}`, deadlineMs)) })),
    ),
  );
}


/**
 * A held request is recorded `aborted` only when its socket closes (a held response never finishes): so when every held
 * request is aborted, no connection to the LLM is left open for it.
 */
const stillHeld = () => llm.requests.filter((request) => request.status === 0 && !request.aborted);

/** The upstream timeout of http.request operations; they are submitted first and hang while the other tests run. */
const httpTimeoutSeconds = 3;
const hungHttpRequests = 3;
let hungHttp: Promise<{ submitted: number[]; operations: Json[]; afterMs: number }>;

beforeAll(async () => {
  llm = await ScriptedLlm.start("openai");
  upstream = await startUpstream();
  const policy = { rules: [{ id: "hung-dependencies", effect: "allow", operations: ["agent.chat", "http.request"] }] };
  server = await startTestServer({
    env: {
      ...llm.env,
      ...writeFiles(upstream.url, roomyAdmission, policy),
      AGENT_MANIFEST_FILE: "test/fixtures/runtime/manifest.hocon",
      AGENT_TOOL_PATH: "test/fixtures/runtime/coded_tools",
      AXON_HTTP_REQUEST_TIMEOUT_SECONDS: String(httpTimeoutSeconds),
    },
  });
  const address = `127.0.0.1:${server.port}`;
  grpcAgents = new AgentServiceClient(address, grpc.credentials.createInsecure());
  grpcConcierge = new ConciergeServiceClient(address, grpc.credentials.createInsecure());

  const api = operationsApi(server.url);
  const submittedAt = performance.now();
  const submitted = await Promise.all(
    Array.from({ length: hungHttpRequests }, (_, i) =>
      api.post(alice, {
        idempotency_key: `hang-${i}`,
        operation: "http.request",
        target: { credential: "upstream", path: `/hang/${i}` },
        arguments: { method: "GET" },
        reason: "call an upstream that never answers",
      }),
    ),
  );
  hungHttp = Promise.all(submitted.map(({ body }) => api.waitTerminal(alice, body.id))).then((operations) => ({
    submitted: submitted.map(({ status }) => status),
    operations,
    afterMs: performance.now() - submittedAt,
  }));
  hungHttp.catch(() => undefined); // awaited by its test; not an unhandled rejection before then
});

afterAll(async () => {
  grpcAgents?.close();
  grpcConcierge?.close();
  await server?.close();
  upstream?.close();
  await llm?.close();
});

beforeEach(() => llm.reset());

describe("a hung LLM and max_execution_seconds (network `slow`: 1 s)", () => {
  it("ends 48 concurrent streams on every protocol with DEADLINE_EXCEEDED, while List and health still answer", async () => {
    const perProtocol = 12;
    const streams = perProtocol * protocols.length;
    for (let i = 0; i < streams; i++) llm.hold();

    const started = performance.now();
    const endings = concurrentChats(perProtocol, "slow");
    await llm.whenReceived(1);
    // The server answers other calls while its chats wait on the LLM.
    const [list, health, grpcList] = await Promise.all([
      fetch(`${server.url}/api/v1/list`),
      fetch(`${server.url}/healthz`),
      new Promise<ConciergeResponse>((resolve, reject) =>
        grpcConcierge.list({}, (error, response) => (error ? reject(error) : resolve(response))),
      ),
    ]);
    expect(stillHeld().length).toBeGreaterThan(0);
    expect(list.status).toBe(200);
    expect(((await list.json()) as Json).agents.map((agent: Json) => agent.agent_name)).toContain("slow");
    expect(health.status).toBe(200);
    expect(grpcList.agents.map((agent) => agent.agent_name)).toContain("slow");

    const ended = await within(15_000, endings, "the streams' end");
    expect(performance.now() - started).toBeGreaterThanOrEqual(1000); // the deadline, not something sooner, ended them
    expect(ended).toHaveLength(streams);
    for (const ending of ended) {
      expect(ending, ending.protocol).toEqual({
        protocol: ending.protocol,
        code: Code.DeadlineExceeded,
        errorInfo: { reason: "MAX_EXECUTION_SECONDS", metadata: { category: "timeout", max_execution_seconds: "1" } },
      });
    }

    // Every chat asked the LLM once (an aborted request is not retried), and every held request was hung up on.
    await within(5000, llm.whenAborted(streams), "the LLM requests' aborts");
    expect(llm.requests).toHaveLength(streams);
    expect(stillHeld()).toEqual([]);
  });

  // On `patient` (5 s): the margin over the LLM's 300 ms holds even when a busy machine slows 48 chats down.
  it("does not cut healthy work: 48 concurrent chats whose LLM takes 300 ms a call all answer within their deadline", async () => {
    llm.script(async (request) => {
      await new Promise((resolve) => setTimeout(resolve, 300));
      return defaultReply(request);
    });
    const ended = await within(15_000, concurrentChats(12, "patient"), "the chats");
    for (const ending of ended) {
      expect(ending, ending.protocol).toEqual({ protocol: ending.protocol, code: 0, answer: expect.stringContaining(ending.protocol) });
    }
    expect(llm.requests.filter((request) => request.status === 200)).toHaveLength(ended.length);
  });
});

describe("a client deadline shorter than max_execution_seconds (network `toolbox`: 120 s)", () => {
  it("ends each stream with DEADLINE_EXCEEDED and aborts its LLM request, on every protocol", async () => {
    const perProtocol = 5;
    const streams = perProtocol * protocols.length;
    for (let i = 0; i < streams; i++) llm.hold();

    const ended = await within(15_000, concurrentChats(perProtocol, "toolbox", 500), "the streams' end");
    for (const ending of ended) expect(ending.code, ending.protocol).toBe(Code.DeadlineExceeded);
    // The REST client kept reading past its deadline: the server itself ended the stream, and said why.
    for (const ending of ended.filter(({ protocol }) => protocol === "REST json-lines")) {
      expect(ending.errorInfo).toEqual({ reason: "DEADLINE_EXCEEDED", metadata: { category: "timeout" } });
    }

    await within(5000, llm.whenAborted(streams), "the LLM requests' aborts");
    expect(stillHeld()).toEqual([]);
  });
});

describe("operations on hung dependencies, each awaited by a long-polling client", () => {
  it("agent.chat operations whose LLM hangs fail with max_execution_seconds", async () => {
    const api = operationsApi(server.url);
    const chats = 3;
    for (let i = 0; i < chats; i++) llm.hold();
    const submitted = await Promise.all(
      Array.from({ length: chats }, (_, i) =>
        api.post(alice, {
          idempotency_key: `chat-${i}`,
          operation: "agent.chat",
          target: { network: "slow" },
          arguments: { text: "hurry" },
          reason: "ask a hung LLM",
        }),
      ),
    );
    expect(submitted.map(({ status }) => status)).toEqual(Array(chats).fill(202));

    const done = await within(15_000, Promise.all(submitted.map(({ body }) => api.waitTerminal(alice, body.id))), "the operations' end");
    for (const operation of done) expect(operation).toMatchObject({ state: "failed", error: { code: "max_execution_seconds" } });
    await within(5000, llm.whenAborted(chats), "the LLM requests' aborts");
    expect(stillHeld()).toEqual([]);
  });

  it("http.request operations against an upstream that never answers fail with upstream_result_unknown, sent once", async () => {
    const { submitted, operations, afterMs } = await within(20_000, hungHttp, "the http.request operations' end");
    expect(submitted).toEqual(Array(hungHttpRequests).fill(202));
    // No sooner than the provider's timeout: nothing but the timeout ended them.
    expect(afterMs).toBeGreaterThanOrEqual(httpTimeoutSeconds * 1000);
    for (const operation of operations) expect(operation).toMatchObject({ state: "failed", error: { code: "upstream_result_unknown" } });
    // Ambiguous, so never retried: each request reached the upstream exactly once.
    for (let i = 0; i < hungHttpRequests; i++) expect(upstream.received.filter(({ url }) => url === `/hang/${i}`)).toHaveLength(1);
  }, 30_000);
});
