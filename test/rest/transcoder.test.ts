import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { create } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AxonError, agentNotFound } from "../../src/errors.js";
import { AgentService } from "../../src/gen/neuro_san/api/grpc/agent_pb.js";
import { ChatMessage_ChatMessageType, ChatMessageSchema } from "../../src/gen/neuro_san/api/grpc/chat_pb.js";
import { ConciergeService } from "../../src/gen/neuro_san/api/grpc/concierge_pb.js";
import { createLogger } from "../../src/logger.js";
import { protocolKey, requestIdKey, streamStartKey } from "../../src/server/context.js";
import { Metrics } from "../../src/server/metrics.js";
import { CallPipeline } from "../../src/server/pipeline/call-pipeline.js";
import { createRestTranscoder } from "../../src/server/rest/transcoder.js";
import { implement } from "../../src/server/routes.js";
import { RpcMethods } from "../../src/server/rpc-methods.js";
import { answerBeforeBody } from "../support/early-answer.js";
import { libraryService } from "./library-service.js";
import { IntakeBudget } from "../../src/server/intake-budget.js";

const maxRequestBytes = 2048;
const known = new Set(["math_guy", "hello_world"]);

// What the services saw, for the tests to inspect.
const seen = { protocols: [] as string[], headers: [] as (string | null)[], requestIds: [] as string[], aborted: false };
let releaseSlowStream: () => void = () => {};
let slowStreamSignal: AbortSignal | undefined;
let hangingCall: AbortSignal | undefined;

const library = libraryService();
const implementations = [
  implement(ConciergeService, { list: () => ({ agents: [{ agentName: "math_guy", description: "adds", tags: [] }] }) }),
  implement(AgentService, {
    function(request, context) {
      seen.protocols.push(context.values.get(protocolKey));
      seen.headers.push(context.requestHeader.get("user_id"));
      seen.requestIds.push(context.values.get(requestIdKey));
      if (request.agentName === "hang") {
        hangingCall = context.signal;
        return new Promise(() => {});
      }
      if (!known.has(request.agentName)) throw agentNotFound(request.agentName);
      context.responseHeader.set("request_id", "r-1");
      return { function: { description: `I am ${request.agentName}` } };
    },
    connectivity: (request) => ({ connectivityInfo: [{ origin: request.agentName, tools: ["a"], displayAs: "" }] }),
    async *streamingChat(request, context) {
      const text = request.userMessage?.text ?? "";
      if (!known.has(request.agentName)) throw agentNotFound(request.agentName);
      context.values.get(streamStartKey)();
      const reply = (message: string) => ({ response: create(ChatMessageSchema, { type: ChatMessage_ChatMessageType.AI, text: message }) });
      if (text === "fail later") {
        yield reply("thinking");
        throw agentNotFound("sub_agent");
      }
      if (text === "slow") {
        slowStreamSignal = context.signal;
        context.signal.addEventListener("abort", () => (seen.aborted = true));
        yield reply("first");
        await new Promise<void>((resolve) => {
          releaseSlowStream = resolve;
          context.signal.addEventListener("abort", () => resolve());
        });
        if (context.signal.aborted) return;
        yield reply("second");
        return;
      }
      if (text === "silent") return;
      yield reply(`echo ${text}`);
      yield { response: { type: ChatMessage_ChatMessageType.AGENT_FRAMEWORK, text: "done", structure: { filter: request.chatFilter?.chatFilterType ?? 0 } } };
    },
  }),
  implement(library, {
    getBook: (request: { name: string }) => ({ name: request.name, title: "Dune" }),
    updateBook: (request: { book?: Record<string, unknown>; notify: boolean }) => ({ ...request.book, draft: request.notify }),
    listBooks: (request: unknown) => ({ request }),
    unrouted: () => ({}),
  } as never),
];

const logLines: Record<string, unknown>[] = [];
const metrics = new Metrics();
let server: http.Server;
let base: string;

beforeAll(async () => {
  const pipeline = new CallPipeline({
    logger: createLogger("info", { write: (line: string) => void logLines.push(JSON.parse(line) as Record<string, unknown>) }),
    metrics,
    // The library stands in for an authenticated service: it takes only "Bearer let-me-in".
    authenticate: (service, { authorization }) => {
      if (service !== library || authorization === "Bearer let-me-in") return undefined;
      throw new AxonError(Code.Unauthenticated, "UNAUTHENTICATED", "a valid bearer secret is required");
    },
    forwardedMetadata: ["request_id", "user_id"],
    intake: new IntakeBudget(64 * 1024 * 1024),
  });
  const transcoder = createRestTranscoder({
    services: [ConciergeService, AgentService, library],
    methods: new RpcMethods(implementations),
    pipeline,
    maxRequestBytes,
    shutdownSignal: new AbortController().signal,
  });
  server = http.createServer((req, res) => {
    void transcoder.handle(req, res).then((handled) => {
      if (!handled) res.writeHead(404, { "content-type": "text/plain" }).end("not a REST route");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const chat = (agent: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${base}/api/v1/${agent}/streaming_chat`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });

const lines = async (response: Response) =>
  (await response.text())
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);

describe("REST transcoding, straight to the service implementation", () => {
  it("a unary GET fills the request from the path and answers snake_case JSON without empty fields", async () => {
    const response = await fetch(`${base}/api/v1/math_guy/function`, { headers: { user_id: "u-7" } });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(response.headers.get("request_id")).toBe("r-1");
    expect(await response.json()).toEqual({ function: { description: "I am math_guy" } });

    const connectivity = await fetch(`${base}/api/v1/hello_world/connectivity`);
    expect(await connectivity.json()).toEqual({ connectivity_info: [{ origin: "hello_world", tools: ["a"] }] });
  });

  it("REST calls meet the call pipeline once: marked as rest, named, with the client's headers, one log line and one count", async () => {
    seen.protocols.length = 0;
    seen.headers.length = 0;
    seen.requestIds.length = 0;
    logLines.length = 0;
    const count = async () =>
      Number(/axon_requests_total\{route="[^"]*AgentService\/Function",protocol="rest",code="OK"\} (\d+)/.exec(await metrics.scrape())?.[1] ?? 0);
    const before = await count();
    const response = await fetch(`${base}/api/v1/math_guy/function`, { headers: { user_id: "u-7", request_id: "req-42" } });
    expect(response.headers.get("x-request-id")).toBe("req-42");
    expect(seen).toMatchObject({ protocols: ["rest"], headers: ["u-7"], requestIds: ["req-42"] });
    expect(logLines).toEqual([
      expect.objectContaining({ msg: "request", request_id: "req-42", route: "/dev.cognizant_ai.neuro_san.api.grpc.agent.AgentService/Function", protocol: "rest", code: "OK" }),
    ]);
    expect(await count()).toBe(before + 1);
  });

  it("a call without a request id gets one, sent back as x-request-id", async () => {
    const response = await fetch(`${base}/api/v1/math_guy/function`);
    expect(response.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("connect-timeout-ms bounds the call: past it the answer is DEADLINE_EXCEEDED and the implementation's signal aborts", async () => {
    const response = await fetch(`${base}/api/v1/hang/function`, { headers: { "connect-timeout-ms": "50" } });
    expect(response.status).toBe(504);
    expect(await response.json()).toMatchObject({ code: 4, details: [{ reason: "DEADLINE_EXCEEDED", metadata: { category: "timeout" } }] });
    expect(hangingCall?.aborted).toBe(true);
  });

  it("a malformed connect-timeout-ms is INVALID_ARGUMENT naming the header", async () => {
    const response = await fetch(`${base}/api/v1/math_guy/function`, { headers: { "connect-timeout-ms": "soon" } });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ code: 3, details: [{ reason: "INVALID_TIMEOUT" }, { fieldViolations: [{ field: "connect-timeout-ms" }] }] });
  });

  it("a call refused on its headers is answered before its body is read, and the connection closed", async () => {
    const { status, connection } = await answerBeforeBody(`${base}/v1/shelves/s1/books/b1`, { method: "PATCH" });
    expect(status).toBe(401);
    expect(connection).toBe("close");
    const allowed = await fetch(`${base}/v1/shelves/s1/books/b1`, { method: "PATCH", headers: { authorization: "Bearer let-me-in" }, body: "{}" });
    expect(allowed.status).toBe(200);
  });

  it("an error from a unary call is a google.rpc.Status with ErrorInfo and the mapped HTTP status", async () => {
    const response = await fetch(`${base}/api/v1/nobody/function`);
    expect(response.status).toBe(404);
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(await response.json()).toEqual({
      code: 5,
      message: "agent network not found",
      details: [
        { "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "AGENT_NOT_FOUND", domain: "axon", metadata: { category: "rejected", agent_name: "nobody" } },
      ],
    });
  });

  it("a path no rule matches is left to the caller", async () => {
    const response = await fetch(`${base}/api/v2/list`);
    expect(response.status).toBe(404);
    expect(await response.text()).toBe("not a REST route");
  });

  it("a known path with another HTTP method is 405 with Allow and an UNIMPLEMENTED status", async () => {
    const response = await fetch(`${base}/api/v1/math_guy/streaming_chat`);
    expect(response.status).toBe(405);
    expect(response.headers.get("allow")).toBe("POST");
    expect(await response.json()).toMatchObject({ code: 12 });
  });

  it("streaming_chat answers 200 json-lines, one ChatResponse per line", async () => {
    const response = await chat("math_guy", { user_message: { type: "HUMAN", text: "hi" }, chat_filter: { chat_filter_type: "maximal" } });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/json-lines");
    expect(await lines(response)).toEqual([
      { response: { type: "AI", text: "echo hi" } },
      { response: { type: "AGENT_FRAMEWORK", text: "done", structure: { filter: 2 } } },
    ]);
  });

  it("an empty body on streaming_chat is an empty request", async () => {
    const response = await chat("math_guy", "");
    expect(response.status).toBe(200);
    expect(await lines(response)).toEqual([
      { response: { type: "AI", text: "echo " } },
      { response: { type: "AGENT_FRAMEWORK", text: "done", structure: { filter: 0 } } },
    ]);
  });

  it("a stream that ends with no message is still a 200 with an empty body", async () => {
    const response = await chat("math_guy", { user_message: { text: "silent" } });
    expect(response.status).toBe(200);
    expect(await response.text()).toBe("");
  });

  it("an error before the stream starts is a plain HTTP error", async () => {
    const response = await chat("nobody", { user_message: { text: "hi" } });
    expect(response.status).toBe(404);
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(await response.json()).toMatchObject({
      code: 5,
      details: [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "AGENT_NOT_FOUND" }],
    });
  });

  it("an error after the stream started is one more line holding the google.rpc.Status", async () => {
    const response = await chat("math_guy", { user_message: { text: "fail later" } });
    expect(response.status).toBe(200);
    expect(await lines(response)).toEqual([
      { response: { type: "AI", text: "thinking" } },
      {
        code: 5,
        message: "agent network not found",
        details: [
          { "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "AGENT_NOT_FOUND", domain: "axon", metadata: { category: "rejected", agent_name: "sub_agent" } },
        ],
      },
    ]);
  });

  it("each line is sent as soon as it is produced", async () => {
    const response = await chat("math_guy", { user_message: { text: "slow" } });
    const reader = response.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toBe('{"response":{"type":"AI","text":"first"}}\n');
    releaseSlowStream();
    let rest = "";
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) rest += new TextDecoder().decode(chunk.value);
    expect(rest).toBe('{"response":{"type":"AI","text":"second"}}\n');
  });

  it("a client that goes away cancels the call", async () => {
    seen.aborted = false;
    const response = await chat("math_guy", { user_message: { text: "slow" } });
    const reader = response.body!.getReader();
    await reader.read();
    await reader.cancel();
    await expect.poll(() => seen.aborted, { timeout: 5000 }).toBe(true);
    expect(slowStreamSignal?.aborted).toBe(true);
  });

  describe("bad requests", () => {
    it("malformed JSON is INVALID_ARGUMENT with reason MALFORMED_JSON", async () => {
      const response = await chat("math_guy", "{not json");
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({
        code: 3,
        details: [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "MALFORMED_JSON" }, { "@type": "type.googleapis.com/google.rpc.BadRequest" }],
      });
    });

    it("a wrong type is INVALID_ARGUMENT with a field violation naming its path", async () => {
      const response = await chat("math_guy", { user_message: { text: 123 }, sly_data: "x" });
      expect(response.status).toBe(400);
      const status = (await response.json()) as { code: number; details: Record<string, unknown>[] };
      expect(status.code).toBe(3);
      expect(status.details[0]).toMatchObject({ reason: "INVALID_FIELD" });
      expect(status.details[1]).toMatchObject({
        "@type": "type.googleapis.com/google.rpc.BadRequest",
        // google/rpc declares no json_name, so its canonical JSON is lowerCamelCase.
        fieldViolations: [
          { field: "user_message.text", description: "expected string, got 123" },
          { field: "sly_data", description: 'expected a JSON object, got "x"' },
        ],
      });
    });

    it("a body declared larger than the limit is refused with 413 before it is read", async () => {
      const response = await chat("math_guy", { sly_data: { blob: "x".repeat(maxRequestBytes) } });
      expect(response.status).toBe(413);
      expect(await response.json()).toMatchObject({ code: 8, details: [{ reason: "REQUEST_TOO_LARGE", metadata: { max_bytes: "2048" } }] });
    });

    it("a chunked body that grows past the limit is refused with 413", async () => {
      const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const request = http.request(`${base}/api/v1/math_guy/streaming_chat`, { method: "POST" }, (response) => {
          let text = "";
          response.on("data", (chunk: Buffer) => (text += chunk.toString()));
          response.on("end", () => resolve({ status: response.statusCode!, body: text }));
        });
        request.on("error", reject);
        request.write(`{"sly_data": {"blob": "`);
        for (let i = 0; i < 10; i++) request.write("x".repeat(512));
        request.end(`"}}`);
      });
      expect(status).toBe(413);
      expect(JSON.parse(body)).toMatchObject({ code: 8, details: [{ reason: "REQUEST_TOO_LARGE" }] });
    });
  });

  describe("rules beyond neuro-san's", () => {
    it("multi-segment variables, additional bindings and query parameters reach the service", async () => {
      const headers = { authorization: "Bearer let-me-in" };
      const book = await fetch(`${base}/v1/shelves/s1/books/b1`, { headers });
      expect(await book.json()).toEqual({ name: "shelves/s1/books/b1", title: "Dune" });
      const peek = await fetch(`${base}/v1/books/b2:peek`, { headers });
      expect(await peek.json()).toEqual({ name: "b2", title: "Dune" });
      const list = await fetch(`${base}/v1/shelves/s1/books?tags=a&tags=b&filter.kind=novel&include_drafts=true&page_size=5`, { headers });
      expect(await list.json()).toEqual({
        request: { shelf: "s1", page_size: 5, tags: ["a", "b"], include_drafts: true, filter: { kind: "NOVEL" } },
      });
    });

    it("a body field and a nested path variable build one request", async () => {
      const response = await fetch(`${base}/v1/shelves/s1/books/b1?notify=true`, {
        method: "PATCH",
        headers: { authorization: "Bearer let-me-in" },
        body: JSON.stringify({ title: "Dune", kind: "POETRY", isbn: "9780441013593" }),
      });
      expect(await response.json()).toEqual({ name: "shelves/s1/books/b1", title: "Dune", kind: "POETRY", isbn: "9780441013593", draft: true });
    });
  });
});
