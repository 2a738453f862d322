import { createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConciergeService } from "../../src/gen/neuro_san/api/grpc/concierge_pb.js";
import { startAxonProcess, type AxonProcess } from "../support/axon-process.js";
import { OtlpReceiver, type ReceivedSpan } from "../support/otlp-receiver.js";
import { chatAcrossTwoProcesses, streamingChatSpan, type TracedChat } from "../support/traced-chat.js";
import { until } from "../support/wait.js";

// Two Axon processes, two model servers and a receiver per chat: on a loaded machine that takes more than the default.
const chatTimeoutMs = 120_000;

const started: { stop(): Promise<unknown> }[] = [];
afterAll(async () => {
  await Promise.all(started.splice(0).map((thing) => thing.stop()));
});

async function startAxon(env: Record<string, string>): Promise<AxonProcess> {
  const axon = await startAxonProcess(env);
  started.push(axon);
  return axon;
}
async function startReceiver(): Promise<OtlpReceiver> {
  const receiver = await OtlpReceiver.start();
  started.push({ stop: () => receiver.close() });
  return receiver;
}

// A client's own trace: Axon's spans must land in it, under this span.
const clientTraceId = "4bf92f3577b34da6a3ce929d0e0e4736";
const clientSpanId = "00f067aa0ba902b7";

/** The chat of test/support/traced-chat.ts, sent under the client's traceparent. */
async function chatUnderClientTrace(extraEnv: Record<string, string> = {}): Promise<TracedChat> {
  const chat = await chatAcrossTwoProcesses(extraEnv, { traceparent: `00-${clientTraceId}-${clientSpanId}-01` });
  started.push({ stop: () => chat.close() });
  return chat;
}

function one(spans: ReceivedSpan[], name: string, service?: string): ReceivedSpan {
  const found = spans.filter((span) => span.name === name && (service === undefined || span.service === service));
  expect(found.map((span) => span.name), `exactly one ${name}`).toHaveLength(1);
  return found[0]!;
}

describe("the trace of a chat", () => {
  let twoProcesses: TracedChat;
  beforeAll(async () => {
    twoProcesses = await chatUnderClientTrace();
  }, chatTimeoutMs);

  it("is one trace under the client's traceparent: server span, agents, model calls and every kind of tool, across processes", async () => {
    const { receiver, caller, callerLlm, remote } = twoProcesses;
    const trace = receiver.trace(clientTraceId);
    // Nothing of the chat started a trace of its own.
    expect(receiver.spans.filter((span) => span.traceId !== clientTraceId).map((span) => span.name)).toEqual([]);

    const server = one(trace, streamingChatSpan, "caller");
    expect(server.parentSpanId).toBe(clientSpanId);
    expect(server.kind).toBe(2);
    expect(server.attributes).toMatchObject({
      "rpc.system": "grpc",
      "rpc.service": "dev.cognizant_ai.neuro_san.api.grpc.agent.AgentService",
      "rpc.method": "StreamingChat",
      "rpc.grpc.status_code": 0,
      "http.request.method": "POST",
      "http.route": "/api/v1/{agent_name}/streaming_chat",
      "http.response.status_code": 200,
    });

    const chat = one(trace, "invoke_agent near_net", "caller");
    expect(chat.parentSpanId).toBe(server.spanId);
    expect(chat.attributes).toMatchObject({ "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "near_net" });
    const frontMan = one(trace, "invoke_agent Near");
    expect(frontMan.parentSpanId).toBe(chat.spanId);
    const frontMansSteps = receiver.children(frontMan).map((span) => span.name);
    expect(frontMansSteps.filter((name) => name === "chat gpt-4o-mini")).toHaveLength(2);
    expect(frontMansSteps.filter((name) => name.startsWith("execute_tool")).sort()).toEqual(
      ["execute_tool Helper", "execute_tool SlyWitness", `execute_tool ${remote}`].sort(),
    );

    const modelCall = receiver.children(frontMan).find((span) => span.name === "chat gpt-4o-mini")!;
    expect(modelCall.kind).toBe(3);
    expect(modelCall.attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "openai",
      "gen_ai.request.model": "gpt-4o-mini",
      // The model the provider says answered, not the one asked for again.
      "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
      "gen_ai.usage.input_tokens": expect.any(Number),
      "gen_ai.usage.output_tokens": expect.any(Number),
      "gen_ai.response.finish_reasons": ["tool_calls"],
    });
    // The model's server got the trace too, with the model call's span as parent.
    expect(callerLlm.requests[0]!.traceparent).toBe(`00-${clientTraceId}-${modelCall.spanId}-01`);

    expect(one(trace, "execute_tool SlyWitness").attributes).toMatchObject({ "gen_ai.operation.name": "execute_tool", "gen_ai.tool.type": "coded_tool" });
    const helper = one(trace, "execute_tool Helper");
    expect(helper.attributes["gen_ai.tool.type"]).toBe("llm_agent");
    const helperAgent = one(trace, "invoke_agent Helper");
    expect(helperAgent.parentSpanId).toBe(helper.spanId);
    expect(receiver.children(helperAgent).map((span) => span.name)).toEqual(["chat gpt-4o-mini"]);

    // The external agent's process continued the trace under the tool call that reached it.
    const external = one(trace, `execute_tool ${remote}`);
    expect(external.attributes["gen_ai.tool.type"]).toBe("external_agent");
    const far = one(trace, streamingChatSpan, "callee");
    expect(far.parentSpanId).toBe(external.spanId);
    const farChat = one(trace, "invoke_agent far_net", "callee");
    expect(farChat.parentSpanId).toBe(far.spanId);
    expect(receiver.children(one(trace, "invoke_agent Far", "callee")).map((span) => span.name)).toEqual(["chat gpt-4o-mini"]);

    // Both encodings arrived: the caller exports http/json, the callee http/protobuf.
    expect([...receiver.contentTypes].sort()).toEqual(["application/json", "application/x-protobuf"]);

    // The access line of the call names the trace and its span.
    const access = await until(() => caller.logs.find((line) => line.msg === "request" && String(line.route).endsWith("/StreamingChat")), "the access line");
    expect(access).toMatchObject({ trace_id: clientTraceId, span_id: server.spanId });
  });

  it("counts every model call, made on the chat thread, in the server's GenAI histograms", async () => {
    const text = await (await fetch(`${twoProcesses.caller.url}/metrics`)).text();
    const labels = 'gen_ai_operation_name="chat",gen_ai_provider_name="openai",gen_ai_request_model="gpt-4o-mini"';
    // The front man twice, the helper once.
    expect(text).toContain(`gen_ai_client_operation_duration_seconds_count{${labels}} 3\n`);
    expect(text).toContain(`gen_ai_client_token_usage_count{${labels},gen_ai_token_type="input"} 3\n`);
    expect(text).toMatch(new RegExp(`gen_ai_client_token_usage_sum\\{${labels},gen_ai_token_type="output"\\} [1-9]`));
  });

  it("carries no prompt, completion, tool arguments, result or sly_data when content capture is not asked for", () => {
    const { receiver } = twoProcesses;
    const exported = Buffer.concat(receiver.rawBodies).toString("latin1");
    for (const text of ["What do you see?", "secret-note", "help me", "Ask everyone.", "Answer:", "sly-hunter2", "sly_data_keys"]) {
      expect(exported).not.toContain(text);
    }
    expect(receiver.spans.some((span) => Object.keys(span.attributes).some((key) => key.startsWith("gen_ai.input") || key.startsWith("gen_ai.tool.call")))).toBe(false);
  });
});

describe("content capture", () => {
  it("with content capture on, model and tool spans carry their messages, and sly_data still never leaves", async () => {
    const { receiver } = await chatUnderClientTrace({ OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "true" });
    const tool = one(receiver.spans, "execute_tool SlyWitness");
    expect(JSON.parse(String(tool.attributes["gen_ai.tool.call.arguments"]))).toEqual({ note: "secret-note" });
    expect(String(tool.attributes["gen_ai.tool.call.result"])).toContain("sly_data_keys");
    const firstCall = receiver.spans.find((span) => span.name === "chat gpt-4o-mini" && String(span.attributes["gen_ai.input.messages"]).includes("What do you see?"));
    expect(firstCall?.attributes["gen_ai.output.messages"]).toContain("SlyWitness");
    expect(Buffer.concat(receiver.rawBodies).toString("latin1")).not.toContain("sly-hunter2");
  }, chatTimeoutMs);
});

describe("the trace context a client sends", () => {
  // Each way a call reaches Axon, with the client span it claims to come from.
  const routes: Record<string, { protocol: string; parent: string; transport?: (url: string) => Transport }> = {
    "Connect over HTTP/1.1 (fast path)": { protocol: "connect", parent: "1000000000000001", transport: (url) => createConnectTransport({ baseUrl: url, httpVersion: "1.1" }) },
    "Connect binary over HTTP/2 (fast path)": {
      protocol: "connect",
      parent: "1000000000000002",
      transport: (url) => createConnectTransport({ baseUrl: url, httpVersion: "2", useBinaryFormat: true }),
    },
    "gRPC (fast path)": { protocol: "grpc", parent: "1000000000000003", transport: (url) => createGrpcTransport({ baseUrl: url }) },
    "gRPC with the JSON codec (connect-node)": { protocol: "grpc", parent: "1000000000000004", transport: (url) => createGrpcTransport({ baseUrl: url, useBinaryFormat: false }) },
    "gRPC-Web (connect-node)": { protocol: "grpc-web", parent: "1000000000000005", transport: (url) => createGrpcWebTransport({ baseUrl: url, httpVersion: "1.1" }) },
    "REST": { protocol: "rest", parent: "1000000000000006" },
  };

  it("is continued by the call's server span on every protocol, its tracestate kept", async () => {
    const receiver = await startReceiver();
    const axon = await startAxon(receiver.env());
    for (const { parent, transport } of Object.values(routes)) {
      const headers = { traceparent: `00-${clientTraceId}-${parent}-01`, tracestate: "vendor=opaque" };
      if (transport === undefined) expect((await fetch(`${axon.url}/api/v1/list`, { headers })).status).toBe(200);
      else await createClient(ConciergeService, transport(axon.url)).list({}, { headers });
    }
    const list = "dev.cognizant_ai.neuro_san.api.grpc.concierge.ConciergeService/List";
    await until(() => receiver.spans.filter((span) => span.name === list).length >= Object.keys(routes).length || undefined, "a span per call");
    for (const [route, { protocol, parent }] of Object.entries(routes)) {
      const span = receiver.spans.find((candidate) => candidate.parentSpanId === parent);
      expect(span, route).toMatchObject({ traceId: clientTraceId, traceState: "vendor=opaque", name: list, kind: 2 });
      expect(span!.attributes, route).toMatchObject({ "axon.protocol": protocol, "rpc.method": "List", "rpc.grpc.status_code": 0 });
    }
  }, chatTimeoutMs);
});
