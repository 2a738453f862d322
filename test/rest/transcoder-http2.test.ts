import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import type { ServiceImpl } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agentNotFound } from "../../src/errors.js";
import { AgentService } from "../../src/gen/neuro_san/api/grpc/agent_pb.js";
import { ChatMessage_ChatMessageType } from "../../src/gen/neuro_san/api/grpc/chat_pb.js";
import { createLogger } from "../../src/logger.js";
import { streamStartKey } from "../../src/server/context.js";
import { Metrics } from "../../src/server/metrics.js";
import { CallPipeline } from "../../src/server/pipeline/call-pipeline.js";
import { createRestTranscoder } from "../../src/server/rest/transcoder.js";
import { implement } from "../../src/server/routes.js";
import { RpcMethods } from "../../src/server/rpc-methods.js";
import { IntakeBudget } from "../../src/server/intake-budget.js";

// The listener hands HTTP/2 (h2c) connections to an http2 server with the same handler: the
// transcoder must speak through the HTTP/2 compatibility response just as well.
let server: http2.Http2Server;
let client: http2.ClientHttp2Session;

beforeAll(async () => {
  const agents: ServiceImpl<typeof AgentService> = {
    function: (request) => ({ function: { description: request.agentName } }),
    connectivity: () => ({}),
    async *streamingChat(request, context) {
      if (request.agentName !== "math_guy") throw agentNotFound(request.agentName);
      context.values.get(streamStartKey)();
      yield { response: { type: ChatMessage_ChatMessageType.AI, text: "one" } };
      yield { response: { type: ChatMessage_ChatMessageType.AGENT_FRAMEWORK, text: "two" } };
    },
  };
  const transcoder = createRestTranscoder({
    services: [AgentService],
    methods: new RpcMethods([implement(AgentService, agents)]),
    pipeline: new CallPipeline({ logger: createLogger("silent"), metrics: new Metrics(), authenticate: () => undefined, forwardedMetadata: [], intake: new IntakeBudget(64 * 1024 * 1024) }),
    maxRequestBytes: 1024,
    shutdownSignal: new AbortController().signal,
  });
  server = http2.createServer((req, res) => {
    void transcoder.handle(req, res).then((handled) => {
      if (!handled) res.writeHead(404).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  client = http2.connect(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});

afterAll(async () => {
  client.close();
  await new Promise((resolve) => server.close(resolve));
});

function request(method: string, path: string, body?: string): Promise<{ status: number; contentType: string; text: string }> {
  return new Promise((resolve, reject) => {
    const stream = client.request({ ":method": method, ":path": path, "content-type": "application/json" });
    let status = 0;
    let contentType = "";
    let text = "";
    stream.on("response", (headers) => {
      status = Number(headers[":status"]);
      contentType = String(headers["content-type"]);
    });
    stream.on("data", (chunk: Buffer) => (text += chunk.toString()));
    stream.on("end", () => resolve({ status, contentType, text }));
    stream.on("error", reject);
    stream.end(body);
  });
}

describe("REST transcoding over HTTP/2", () => {
  it("answers a unary GET", async () => {
    const response = await request("GET", "/api/v1/math_guy/function");
    expect(response).toEqual({ status: 200, contentType: "application/json", text: '{"function":{"description":"math_guy"}}' });
  });

  it("streams json-lines", async () => {
    const response = await request("POST", "/api/v1/math_guy/streaming_chat", '{"user_message": {"text": "hi"}}');
    expect(response.status).toBe(200);
    expect(response.contentType).toBe("application/json-lines");
    expect(response.text).toBe('{"response":{"type":"AI","text":"one"}}\n{"response":{"type":"AGENT_FRAMEWORK","text":"two"}}\n');
  });

  it("answers errors before the stream as plain HTTP errors, and oversized bodies with 413", async () => {
    const missing = await request("POST", "/api/v1/nobody/streaming_chat", "{}");
    expect(missing.status).toBe(404);
    expect(JSON.parse(missing.text)).toMatchObject({ code: 5 });
    const large = await request("POST", "/api/v1/math_guy/streaming_chat", JSON.stringify({ sly_data: { x: "y".repeat(2000) } }));
    expect(large.status).toBe(413);
  });
});
