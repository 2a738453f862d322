import { readFileSync } from "node:fs";
import path from "node:path";
import * as grpc from "@grpc/grpc-js";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { compressionBrotli, createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentOperationsService } from "../../src/gen/axon/agent/v1/agent_pb.js";
import { AgentService } from "../../src/gen/neuro_san/api/grpc/agent_pb.js";
import { ConciergeService } from "../../src/gen/neuro_san/api/grpc/concierge_pb.js";
import { ConciergeServiceClient, type ConciergeRequest, type ConciergeResponse } from "../gen/neuro_san/api/grpc/concierge.js";
import { ScriptedChats } from "../support/scripted-chat.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { fixtureEnv } from "./expectations.js";

// Every way a call can reach Axon (the fast paths and connect-node's) ends in the same pipeline: the same answer, a
// request id echoed, exactly one log line and one count, the same refusal without credentials.
let server: TestServer;
const logLines: string[] = [];
let clientSecret: string;
beforeAll(async () => {
  server = await startTestServer({ env: fixtureEnv, chats: new ScriptedChats(), logLines });
  clientSecret = readFileSync(path.join(server.dataDir, "clients"), "utf8").match(/^local\s*=\s*(\S+)/m)![1]!;
});
afterAll(() => server.close());

let counter = 0;
const nextRequestId = () => `route-${++counter}`;
const requestLines = (requestId: string) =>
  logLines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.request_id === requestId && /^request/.test(String(line.msg)));

/** The one log line of a finished call (it is written once the answer is complete, streams included). */
async function theLogLineOf(requestId: string): Promise<Record<string, unknown>> {
  await expect.poll(() => requestLines(requestId).length).toBeGreaterThan(0);
  const lines = requestLines(requestId);
  expect(lines).toHaveLength(1);
  return lines[0]!;
}

const unaryRoutes: Record<string, { protocol: string; transport: () => Transport }> = {
  "Connect JSON over HTTP/1.1 (fast path)": { protocol: "connect", transport: () => createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }) },
  "Connect binary over HTTP/2 (fast path)": {
    protocol: "connect",
    transport: () => createConnectTransport({ baseUrl: server.url, httpVersion: "2", useBinaryFormat: true }),
  },
  "gRPC over HTTP/2 (fast path)": { protocol: "grpc", transport: () => createGrpcTransport({ baseUrl: server.url }) },
  "Connect with brotli (connect-node)": {
    protocol: "connect",
    transport: () => createConnectTransport({ baseUrl: server.url, httpVersion: "1.1", sendCompression: compressionBrotli, compressMinBytes: 1 }),
  },
  "gRPC with the JSON codec (connect-node)": { protocol: "grpc", transport: () => createGrpcTransport({ baseUrl: server.url, useBinaryFormat: false }) },
  "gRPC with brotli (connect-node)": {
    protocol: "grpc",
    transport: () => createGrpcTransport({ baseUrl: server.url, sendCompression: compressionBrotli, compressMinBytes: 1 }),
  },
  "gRPC-Web over HTTP/1.1 (connect-node)": { protocol: "grpc-web", transport: () => createGrpcWebTransport({ baseUrl: server.url, httpVersion: "1.1" }) },
};

describe.each(Object.entries(unaryRoutes))("unary %s", (_name, { protocol, transport }) => {
  it("answers, echoes the request id, and leaves one log line and one count", async () => {
    const requestId = nextRequestId();
    let echoed: string | null = null;
    const response = await createClient(ConciergeService, transport()).list({}, { headers: { request_id: requestId }, onHeader: (header) => (echoed = header.get("x-request-id")) });
    expect(response.agents.map((agent) => agent.agentName)).toEqual(["greeter", "relay"]);
    expect(echoed).toBe(requestId);
    expect(await theLogLineOf(requestId)).toMatchObject({ protocol, code: "OK", route: "/dev.cognizant_ai.neuro_san.api.grpc.concierge.ConciergeService/List" });
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    expect(metrics).toMatch(new RegExp(`axon_requests_total\\{route="[^"]*ConciergeService/List",protocol="${protocol}",code="OK"\\} \\d+`));
  });

  it("refuses an authenticated service without its bearer, and with it answers", async () => {
    const requestId = nextRequestId();
    const operations = createClient(AgentOperationsService, transport());
    const error = await operations.getDescriptor({}, { headers: { request_id: requestId } }).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(error?.code).toBe(Code.Unauthenticated);
    expect(await theLogLineOf(requestId)).toMatchObject({ protocol, code: "Unauthenticated", category: "authentication" });
    const descriptor = await operations.getDescriptor({}, { headers: { authorization: `Bearer ${clientSecret}` } });
    expect(descriptor.descriptor?.operations).toContain("agent.chat");
  });
});

const streamRoutes: Record<string, { protocol: string; transport: () => Transport }> = {
  "gRPC over HTTP/2": { protocol: "grpc", transport: () => createGrpcTransport({ baseUrl: server.url }) },
  "Connect over HTTP/1.1": { protocol: "connect", transport: () => createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }) },
  "gRPC-Web over HTTP/1.1": { protocol: "grpc-web", transport: () => createGrpcWebTransport({ baseUrl: server.url, httpVersion: "1.1" }) },
};

describe.each(Object.entries(streamRoutes))("server stream %s (connect-node)", (_name, { protocol, transport }) => {
  it("streams, and leaves one log line once the stream has ended", async () => {
    const requestId = nextRequestId();
    const texts: string[] = [];
    for await (const message of createClient(AgentService, transport()).streamingChat({ agentName: "greeter", userMessage: { text: "hi" } }, { headers: { request_id: requestId } })) {
      texts.push(message.response?.text ?? "");
    }
    expect(texts).toEqual(["echo hi (turn 1)"]);
    expect(await theLogLineOf(requestId)).toMatchObject({ protocol, code: "OK", route: "/dev.cognizant_ai.neuro_san.api.grpc.agent.AgentService/StreamingChat" });
  });
});

describe("REST (fast path)", () => {
  it("a unary route and a json-lines stream each leave one log line marked rest", async () => {
    const unary = nextRequestId();
    const list = await fetch(`${server.url}/api/v1/list`, { headers: { request_id: unary } });
    expect(list.headers.get("x-request-id")).toBe(unary);
    expect(await theLogLineOf(unary)).toMatchObject({ protocol: "rest", code: "OK" });
    const stream = nextRequestId();
    const chat = await fetch(`${server.url}/api/v1/greeter/streaming_chat`, { method: "POST", headers: { request_id: stream }, body: '{"user_message":{"text":"hi"}}' });
    expect(await chat.text()).toContain("echo hi (turn 1)");
    expect(await theLogLineOf(stream)).toMatchObject({ protocol: "rest", code: "OK" });
  });
});

describe("one port for every client", () => {
  it("grpc-js (fast path) and Connect over HTTP/2 from connect-node (connect-node) are served side by side", async () => {
    const grpcClient = new ConciergeServiceClient(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure());
    const connectClient = createClient(AgentService, createConnectTransport({ baseUrl: server.url, httpVersion: "2" }));
    const [list, chat] = await Promise.all([
      new Promise<ConciergeResponse>((resolve, reject) =>
        grpcClient.list({} as ConciergeRequest, (error: grpc.ServiceError | null, response: ConciergeResponse) => (error ? reject(error) : resolve(response))),
      ),
      (async () => {
        const texts: string[] = [];
        for await (const message of connectClient.streamingChat({ agentName: "greeter", userMessage: { text: "yo" } })) texts.push(message.response?.text ?? "");
        return texts;
      })(),
    ]);
    expect(list.agents.map((agent) => agent.agent_name)).toEqual(["greeter", "relay"]);
    expect(chat).toEqual(["echo yo (turn 1)"]);
    grpcClient.close();
  });

  it("a unary gRPC call (fast path) and a gRPC stream (connect-node) share one HTTP/2 connection", async () => {
    // One transport keeps one HTTP/2 session: the two calls are streams of the same connection, split per stream.
    const transport = createGrpcTransport({ baseUrl: server.url });
    const requestIds = [nextRequestId(), nextRequestId()];
    const [list, texts] = await Promise.all([
      createClient(ConciergeService, transport).list({}, { headers: { request_id: requestIds[0]! } }),
      (async () => {
        const received: string[] = [];
        for await (const message of createClient(AgentService, transport).streamingChat(
          { agentName: "greeter", userMessage: { text: "both" } },
          { headers: { request_id: requestIds[1]! } },
        )) {
          received.push(message.response?.text ?? "");
        }
        return received;
      })(),
    ]);
    expect(list.agents).toHaveLength(2);
    expect(texts).toEqual(["echo both (turn 1)"]);
    expect(await theLogLineOf(requestIds[0]!)).toMatchObject({ protocol: "grpc", route: "/dev.cognizant_ai.neuro_san.api.grpc.concierge.ConciergeService/List" });
    expect(await theLogLineOf(requestIds[1]!)).toMatchObject({ protocol: "grpc", route: "/dev.cognizant_ai.neuro_san.api.grpc.agent.AgentService/StreamingChat" });
  });
});
