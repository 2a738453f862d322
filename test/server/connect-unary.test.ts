import zlib from "node:zlib";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { compressionGzip, createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AxonError } from "../../src/errors.js";
import { ErrorInfoSchema } from "../../src/gen/google/rpc/error_details_pb.js";
import { AgentService } from "../../src/gen/neuro_san/api/grpc/agent_pb.js";
import { ConciergeService } from "../../src/gen/neuro_san/api/grpc/concierge_pb.js";
import { createLogger } from "../../src/logger.js";
import { connectUnaryRoute } from "../../src/server/connect/unary-call.js";
import { listen, type Listener } from "../../src/server/listener.js";
import { Metrics } from "../../src/server/metrics.js";
import { CallPipeline } from "../../src/server/pipeline/call-pipeline.js";
import { implement } from "../../src/server/routes.js";
import { RpcMethods } from "../../src/server/rpc-methods.js";
import { answerBeforeBody } from "../support/early-answer.js";
import { until } from "../support/wait.js";
import { instrumentedAgentService, type Seen } from "./instrumented-agent-service.js";
import { IntakeBudget } from "../../src/server/intake-budget.js";

// The Connect unary fast path on its own, over a real listener (HTTP/1.1 and h2c) and real connect-node clients.
const maxRequestBytes = 4096;
const seen: Seen = { metadata: [], signals: new Map() };
const logLines: Record<string, unknown>[] = [];
let listener: Listener;
let baseUrl: string;

beforeAll(async () => {
  const methods = new RpcMethods([
    implement(AgentService, instrumentedAgentService(seen)),
    implement(ConciergeService, { list: () => ({ agents: [] }) }),
  ]);
  const pipeline = new CallPipeline({
    logger: createLogger("info", { write: (line: string) => void logLines.push(JSON.parse(line) as Record<string, unknown>) }),
    metrics: new Metrics(),
    // ConciergeService stands in for an authenticated service here.
    authenticate: (service) => {
      if (service !== ConciergeService) return undefined;
      throw new AxonError(Code.Unauthenticated, "UNAUTHENTICATED", "a valid bearer secret is required", { metadata: { category: "authentication" } });
    },
    forwardedMetadata: ["request_id", "user_id"],
    intake: new IntakeBudget(64 * 1024 * 1024),
  });
  const connectUnary = connectUnaryRoute({ pipeline, maxRequestBytes, shutdownSignal: new AbortController().signal });
  listener = await listen(
    (req, res) => {
      const rpc = methods.resolve(req.url ?? "");
      const served = rpc && connectUnary(req, res, rpc);
      if (!served) res.writeHead(404, { "content-type": "text/plain" }).end("declined");
    },
    { port: 0, host: "127.0.0.1" },
  );
  baseUrl = `http://127.0.0.1:${listener.port}`;
});
afterAll(() => listener.close(1000));

const functionPath = "/dev.cognizant_ai.neuro_san.api.grpc.agent.AgentService/Function";
const post = (body: string | Buffer, headers: Record<string, string> = {}) =>
  fetch(baseUrl + functionPath, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });

const transports: Record<string, () => Transport> = {
  "JSON over HTTP/1.1": () => createConnectTransport({ baseUrl, httpVersion: "1.1" }),
  "binary over HTTP/2": () => createConnectTransport({ baseUrl, httpVersion: "2", useBinaryFormat: true }),
};

describe.each(Object.entries(transports))("Connect unary, %s", (_name, transport) => {
  const agents = () => createClient(AgentService, transport());

  it("answers the message with the implementation's headers, and its trailers as trailer- headers", async () => {
    let header: Headers | undefined;
    let trailer: Headers | undefined;
    const response = await agents().function({ agentName: "greeter" }, { onHeader: (h) => (header = h), onTrailer: (t) => (trailer = t) });
    expect(response.function?.description).toBe("I am greeter");
    expect(header?.get("x-answered-by")).toBe("fast path");
    expect(trailer?.get("x-tally")).toBe("1");
  });

  it("a failure is a Connect error carrying the google.rpc details", async () => {
    const error = await agents()
      .function({ agentName: "nobody" })
      .then(() => undefined, (e: unknown) => ConnectError.from(e));
    expect(error?.code).toBe(Code.NotFound);
    expect(error?.findDetails(ErrorInfoSchema)[0]).toMatchObject({ reason: "AGENT_NOT_FOUND", metadata: { agent_name: "nobody" } });
  });

  it("the client's timeout bounds the call: DEADLINE_EXCEEDED, and the implementation's signal aborts", async () => {
    seen.signals.delete("hang");
    const error = await agents()
      .function({ agentName: "hang" }, { timeoutMs: 200 })
      .then(() => undefined, (e: unknown) => ConnectError.from(e));
    expect(error?.code).toBe(Code.DeadlineExceeded);
    await until(() => seen.signals.get("hang")?.aborted === true, "the implementation's signal aborted");
  });

  it("a gzipped request is read, and the answer gzipped when the client accepts it", async () => {
    const client = createClient(AgentService, createConnectTransport({ baseUrl, httpVersion: "1.1", sendCompression: compressionGzip, compressMinBytes: 1 }));
    expect((await client.function({ agentName: "long" })).function?.description).toHaveLength(5000);
  });
});

describe("Connect unary on the wire", () => {
  it("names the call: request_id forwarded and echoed as x-request-id, one log line marked connect", async () => {
    logLines.length = 0;
    const response = await post('{"agent_name":"greeter"}', { request_id: "req-9", user_id: "ada" });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(response.headers.get("x-request-id")).toBe("req-9");
    expect(await response.json()).toEqual({ function: { description: "I am greeter" } });
    expect(seen.metadata.at(-1)).toEqual({ request_id: "req-9", user_id: "ada" });
    expect(logLines).toEqual([expect.objectContaining({ msg: "request", request_id: "req-9", protocol: "connect", code: "OK" })]);
  });

  it("an error answers its HTTP status with Connect's error JSON", async () => {
    const response = await post('{"agent_name":"nobody"}');
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ code: "not_found", message: "agent network not found", details: [{ type: "google.rpc.ErrorInfo" }] });
  });

  // An unknown field is ignored, as on every other path (test/conformance/messages.test.ts).
  it("JSON that is not the request message (not JSON at all, a field of the wrong type) is INVALID_ARGUMENT", async () => {
    for (const body of ["{not json", '{"agent_name":7}']) {
      const response = await post(body);
      expect(response.status).toBe(400);
      const error = (await response.json()) as { code: string; details: { type: string; debug: { reason?: string } }[] };
      expect(error.code).toBe("invalid_argument");
      expect(error.details[0]).toMatchObject({ type: "google.rpc.ErrorInfo", debug: { reason: "REQUEST_UNDECODABLE" } });
    }
  });

  it("an empty JSON body is the empty request", async () => {
    const response = await post("");
    expect(response.status).toBe(200);
  });

  it("a body over the size limit is RESOURCE_EXHAUSTED, also once inflated", async () => {
    const large = await post(JSON.stringify({ agent_name: "x".repeat(maxRequestBytes) }));
    expect(large.status).toBe(429);
    expect(await large.json()).toMatchObject({ code: "resource_exhausted", details: [{ debug: { reason: "REQUEST_TOO_LARGE" } }] });
    const bomb = await post(zlib.gzipSync(JSON.stringify({ agent_name: "x".repeat(100_000) })), { "content-encoding": "gzip" });
    expect(bomb.status).toBe(429);
  });

  it("a call refused on its headers is answered before its body is read, and the HTTP/1.1 connection closed", async () => {
    const { status, connection } = await answerBeforeBody(`${baseUrl}/dev.cognizant_ai.neuro_san.api.grpc.concierge.ConciergeService/List`, {
      method: "POST",
      headers: { "content-type": "application/json" },
    });
    expect(status).toBe(401);
    expect(connection).toBe("close");
  });

  it("declines what connect-node serves instead: GET, a stream content type, another compression", async () => {
    expect(await (await fetch(`${baseUrl}${functionPath}?encoding=json&message=%7B%7D`)).text()).toBe("declined");
    expect(await (await post("{}", { "content-type": "application/connect+json" })).text()).toBe("declined");
    expect(await (await post("{}", { "content-encoding": "br" })).text()).toBe("declined");
  });
});
