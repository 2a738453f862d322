import http2 from "node:http2";
import zlib from "node:zlib";
import * as grpc from "@grpc/grpc-js";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AxonError } from "../../src/errors.js";
import { AgentService } from "../../src/gen/neuro_san/api/grpc/agent_pb.js";
import { ConciergeService } from "../../src/gen/neuro_san/api/grpc/concierge_pb.js";
import { createLogger } from "../../src/logger.js";
import { grpcUnaryRoute } from "../../src/server/grpc/unary-call.js";
import { listen, type Listener } from "../../src/server/listener.js";
import { Metrics } from "../../src/server/metrics.js";
import { CallPipeline } from "../../src/server/pipeline/call-pipeline.js";
import { implement } from "../../src/server/routes.js";
import { RpcMethods } from "../../src/server/rpc-methods.js";
import { ErrorInfo } from "../gen/google/rpc/error_details.js";
import { Status } from "../gen/google/rpc/status.js";
import { AgentServiceClient, FunctionRequest, FunctionResponse } from "../gen/neuro_san/api/grpc/agent.js";
import { ConciergeServiceClient, ConciergeRequest, ConciergeResponse } from "../gen/neuro_san/api/grpc/concierge.js";
import { envelope } from "../support/envelopes.js";
import { until } from "../support/wait.js";
import { instrumentedAgentService, type Seen } from "./instrumented-agent-service.js";
import { IntakeBudget } from "../../src/server/intake-budget.js";

// The gRPC fast path on its own, over a real listener and real grpc-js clients, with implementations that can hang,
// fail and report what they saw.
const maxRequestBytes = 4096;
const seen: Seen = { metadata: [], signals: new Map() };
const logLines: Record<string, unknown>[] = [];
let listener: Listener;
let address: string;

/** A listener whose HTTP/2 streams meet only the gRPC fast path; `shutdown` stands for the server's end of grace. */
async function fastPathListener(shutdown: AbortSignal): Promise<Listener> {
  const methods = new RpcMethods([
    implement(AgentService, instrumentedAgentService(seen)),
    implement(ConciergeService, { list: () => ({ agents: [{ agentName: "secret_network", description: "", tags: [] }] }) }),
  ]);
  const pipeline = new CallPipeline({
    logger: createLogger("info", { write: (line: string) => void logLines.push(JSON.parse(line) as Record<string, unknown>) }),
    metrics: new Metrics(),
    // ConciergeService stands in for an authenticated service here.
    authenticate: (service, { authorization }) => {
      if (service !== ConciergeService || authorization === "Bearer open-sesame") return undefined;
      throw new AxonError(Code.Unauthenticated, "UNAUTHENTICATED", "a valid bearer secret is required", { metadata: { category: "authentication" } });
    },
    forwardedMetadata: ["request_id", "user_id"],
    intake: new IntakeBudget(64 * 1024 * 1024),
  });
  const onHttp2Stream = grpcUnaryRoute(methods, { pipeline, maxRequestBytes, shutdownSignal: shutdown });
  return listen((_req, res) => res.writeHead(404).end(), { port: 0, host: "127.0.0.1", onHttp2Stream });
}

beforeAll(async () => {
  listener = await fastPathListener(new AbortController().signal);
  address = `127.0.0.1:${listener.port}`;
});
afterAll(() => listener.close(1000));

const insecure = grpc.credentials.createInsecure();

interface Outcome<T> {
  error: grpc.ServiceError | null;
  response: T | undefined;
  headers: grpc.Metadata | undefined;
  trailers: grpc.Metadata | undefined;
}

function callFunction(request: Partial<FunctionRequest>, options: { metadata?: grpc.Metadata; deadline?: number; client?: AgentServiceClient } = {}) {
  const client = options.client ?? new AgentServiceClient(address, insecure);
  return new Promise<Outcome<FunctionResponse>>((resolve) => {
    let headers: grpc.Metadata | undefined;
    let trailers: grpc.Metadata | undefined;
    const call = client.function(
      { agent_name: "", ...request },
      options.metadata ?? new grpc.Metadata(),
      { deadline: options.deadline ?? Infinity },
      (error: grpc.ServiceError | null, response: FunctionResponse) => {
        // The status (with its trailers) arrives after the callback: give it its turn.
        setImmediate(() => {
          if (!options.client) client.close();
          resolve({ error, response: error ? undefined : response, headers, trailers });
        });
      },
    );
    call.on("metadata", (metadata) => (headers = metadata));
    call.on("status", (status) => (trailers = status.metadata));
  });
}

function errorInfoOf(error: grpc.ServiceError) {
  const status = Status.decode(error.metadata.get("grpc-status-details-bin")[0] as Buffer);
  expect(status.code).toBe(error.code);
  return ErrorInfo.decode(status.details.find((any) => any.type_url.endsWith("google.rpc.ErrorInfo"))!.value);
}

describe("unary gRPC framed on the HTTP/2 stream", () => {
  it("answers with headers, one message and trailers, carrying the implementation's own headers and trailers", async () => {
    const { error, response, headers, trailers } = await callFunction({ agent_name: "greeter" });
    expect(error).toBeNull();
    expect(response?.function?.description).toBe("I am greeter");
    expect(headers?.get("x-answered-by")).toEqual(["fast path"]);
    expect(trailers?.get("x-tally")).toEqual(["1"]);
  });

  it("names the call from its metadata: request_id forwarded and echoed as x-request-id, one log line", async () => {
    logLines.length = 0;
    const metadata = new grpc.Metadata();
    metadata.set("request_id", "req-7");
    metadata.set("user_id", "ada");
    const { headers } = await callFunction({ agent_name: "greeter" }, { metadata });
    expect(headers?.get("x-request-id")).toEqual(["req-7"]);
    expect(seen.metadata.at(-1)).toEqual({ request_id: "req-7", user_id: "ada" });
    expect(logLines).toEqual([expect.objectContaining({ msg: "request", request_id: "req-7", protocol: "grpc", code: "OK", route: "/dev.cognizant_ai.neuro_san.api.grpc.agent.AgentService/Function" })]);
  });

  it("a failure is a google.rpc.Status with its ErrorInfo in grpc-status-details-bin", async () => {
    const { error } = await callFunction({ agent_name: "nobody" });
    expect(error?.code).toBe(grpc.status.NOT_FOUND);
    expect(error?.details).toBe("agent network not found");
    expect(errorInfoOf(error!)).toMatchObject({ reason: "AGENT_NOT_FOUND", domain: "axon", metadata: { agent_name: "nobody", category: "rejected" } });
  });

  it("a bug is INTERNAL with no message of its own, and is logged as an error", async () => {
    logLines.length = 0;
    const { error } = await callFunction({ agent_name: "crash" });
    expect(error?.code).toBe(grpc.status.INTERNAL);
    expect(error?.details).toBe("internal error");
    expect(JSON.stringify(error?.metadata.getMap())).not.toContain("/etc/x");
    expect(logLines).toEqual([expect.objectContaining({ msg: "request failed", level: 50, code: "Internal" })]);
  });

  it("grpc-timeout bounds the call: DEADLINE_EXCEEDED at the deadline, and the implementation's signal aborts", async () => {
    const { error } = await callFunction({ agent_name: "hang" }, { deadline: Date.now() + 300 });
    expect(error?.code).toBe(grpc.status.DEADLINE_EXCEEDED);
    await until(() => seen.signals.get("hang")?.aborted === true, "the implementation's signal aborted");
  });

  it("a client that cancels aborts the implementation's signal, and the call is logged as cancelled", async () => {
    const client = new AgentServiceClient(address, insecure);
    seen.signals.delete("hang");
    logLines.length = 0;
    const call = client.function({ agent_name: "hang" }, () => {});
    await until(() => seen.signals.has("hang"), "the call reached the implementation");
    call.cancel();
    await until(() => seen.signals.get("hang")!.aborted, "the implementation's signal aborted");
    await until(() => logLines.some((line) => line.code === "Canceled"), "the call logged as cancelled");
    client.close();
  });

  it("the end of the server's shutdown grace ends a call still running with UNAVAILABLE", async () => {
    const shutdown = new AbortController();
    const ending = await fastPathListener(shutdown.signal);
    const client = new AgentServiceClient(`127.0.0.1:${ending.port}`, insecure);
    seen.signals.delete("hang");
    const outcome = callFunction({ agent_name: "hang" }, { client });
    await until(() => seen.signals.has("hang"), "the call reached the implementation");
    shutdown.abort(new ConnectError("server shutting down", Code.Unavailable));
    expect((await outcome).error?.code).toBe(grpc.status.UNAVAILABLE);
    expect(seen.signals.get("hang")?.aborted).toBe(true);
    client.close();
    await ending.close(1000);
  });

  it("a message over the size limit is RESOURCE_EXHAUSTED, and the connection serves the next call", async () => {
    const client = new AgentServiceClient(address, insecure);
    const refused = await callFunction({ agent_name: "x".repeat(maxRequestBytes + 1) }, { client });
    expect(refused.error?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(errorInfoOf(refused.error!)).toMatchObject({ reason: "REQUEST_TOO_LARGE", metadata: { max_bytes: String(maxRequestBytes) } });
    const next = await callFunction({ agent_name: "greeter" }, { client });
    expect(next.response?.function?.description).toBe("I am greeter");
    client.close();
  });

  it("a call refused on its headers is answered at once: its body is never read", async () => {
    const session = http2.connect(`http://${address}`);
    try {
      const stream = session.request({
        ":method": "POST",
        ":path": "/dev.cognizant_ai.neuro_san.api.grpc.concierge.ConciergeService/List",
        "content-type": "application/grpc",
      });
      // A frame header announcing 1 MB, and none of it: the answer cannot wait for the body.
      stream.write(Buffer.from([0, 0, 0x10, 0, 0]));
      const headers = await new Promise<http2.IncomingHttpHeaders>((resolve) => stream.once("response", resolve));
      expect(headers["grpc-status"]).toBe(String(grpc.status.UNAUTHENTICATED));
      expect(headers["www-authenticate"]).toBe("Bearer");
      await new Promise((resolve) => stream.once("close", resolve));
      expect(stream.rstCode).toBe(http2.constants.NGHTTP2_NO_ERROR);
    } finally {
      session.close();
    }
    const concierge = new ConciergeServiceClient(address, insecure);
    const metadata = new grpc.Metadata();
    metadata.set("authorization", "Bearer open-sesame");
    const list = await new Promise<ConciergeResponse>((resolve, reject) =>
      concierge.list({} as ConciergeRequest, metadata, (error: grpc.ServiceError | null, response: ConciergeResponse) => (error ? reject(error) : resolve(response))),
    );
    expect(list.agents.map((agent) => agent.agent_name)).toEqual(["secret_network"]);
    concierge.close();
  });

  it("bytes that are not the request message are INVALID_ARGUMENT, not INTERNAL", async () => {
    const { status, headers } = await rawCall(Buffer.from([0, 0, 0, 0, 3, 0xff, 0xff, 0xff]));
    expect(status).toBe(200);
    expect(headers["grpc-status"]).toBe(String(grpc.status.INVALID_ARGUMENT));
  });

  it("a gzipped request is read, and a large answer is gzipped for a client that accepts gzip", async () => {
    const message = FunctionRequest.encode({ agent_name: "long" }).finish();
    const gzipped = zlib.gzipSync(message);
    const frame = envelope(1, gzipped);
    const { headers, body, trailers } = await rawCall(frame, { "grpc-encoding": "gzip", "grpc-accept-encoding": "gzip" });
    expect(headers["grpc-encoding"]).toBe("gzip");
    expect(trailers["grpc-status"]).toBe("0");
    expect(body[0]).toBe(1);
    const answer = FunctionResponse.decode(zlib.gunzipSync(body.subarray(5)));
    expect(answer.function?.description).toBe("x".repeat(5000));
  });
});

async function rawCall(frame: Buffer, extraHeaders: Record<string, string> = {}) {
  const session = http2.connect(`http://${address}`);
  try {
    const stream = session.request({
      ":method": "POST",
      ":path": "/dev.cognizant_ai.neuro_san.api.grpc.agent.AgentService/Function",
      "content-type": "application/grpc",
      te: "trailers",
      ...extraHeaders,
    });
    const chunks: Buffer[] = [];
    let trailers: http2.IncomingHttpHeaders = {};
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    stream.on("trailers", (received) => (trailers = received));
    const response = new Promise<http2.IncomingHttpHeaders>((resolve) => stream.once("response", resolve));
    const closed = new Promise((resolve) => stream.once("close", resolve));
    stream.end(frame);
    const headers = await response;
    await closed;
    return { status: Number(headers[":status"]), headers, body: Buffer.concat(chunks), trailers };
  } finally {
    session.close();
  }
}

// The request id must be per call, whatever the client: a call without one gets its own.
describe("request ids", () => {
  it("a call without a request_id gets a fresh one", async () => {
    const first = await callFunction({ agent_name: "greeter" });
    const second = await callFunction({ agent_name: "greeter" });
    const [a, b] = [first.headers?.get("x-request-id")[0], second.headers?.get("x-request-id")[0]];
    expect(a).toMatch(/^[0-9a-f-]{36}$/);
    expect(b).not.toBe(a);
  });
});
