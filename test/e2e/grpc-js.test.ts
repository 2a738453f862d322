import path from "node:path";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorInfo } from "../gen/google/rpc/error_details.js";
import { Status } from "../gen/google/rpc/status.js";
import {
  AgentServiceClient,
  ChatFilter_ChatFilterType,
  ChatRequest,
  ChatResponse,
  FunctionRequest,
  FunctionResponse,
  type ConnectivityRequest,
  type ConnectivityResponse,
} from "../gen/neuro_san/api/grpc/agent.js";
import { ChatMessage_ChatMessageType } from "../gen/neuro_san/api/grpc/chat.js";
import { ConciergeServiceClient, type ConciergeRequest, type ConciergeResponse } from "../gen/neuro_san/api/grpc/concierge.js";
import { ScriptedChats } from "../support/scripted-chat.js";
import { projectRoot, startTestServer, type TestServer } from "../support/server.js";
import { expectedAgents, expectedGreeterFunction, fixtureEnv } from "./expectations.js";

let server: TestServer;
let chats: ScriptedChats;
let address: string;
beforeAll(async () => {
  chats = new ScriptedChats();
  server = await startTestServer({ env: fixtureEnv, chats });
  address = `127.0.0.1:${server.port}`;
});
afterAll(() => server.close());

const insecure = grpc.credentials.createInsecure();

function unary<Req, Res>(call: (req: Req, cb: (e: grpc.ServiceError | null, r: Res) => void) => unknown, req: Req): Promise<Res> {
  return new Promise((resolve, reject) => call(req, (error, response) => (error ? reject(error) : resolve(response))));
}

function collect<T>(stream: grpc.ClientReadableStream<T>): Promise<T[]> {
  return new Promise((resolve, reject) => {
    const items: T[] = [];
    stream.on("data", (item: T) => items.push(item));
    stream.on("error", reject);
    stream.on("end", () => resolve(items));
  });
}

/** google.rpc.Status as grpc-js clients in any language read it: from the grpc-status-details-bin trailer. */
function errorInfoOf(error: grpc.ServiceError) {
  const [raw] = error.metadata.get("grpc-status-details-bin");
  const status = Status.decode(raw as Buffer);
  expect(status.code).toBe(error.code);
  const detail = status.details.find((any) => any.type_url === "type.googleapis.com/google.rpc.ErrorInfo");
  return detail && ErrorInfo.decode(detail.value);
}

describe("gRPC with ts-proto stubs on @grpc/grpc-js", () => {
  it("lists, describes and chats", async () => {
    const concierge = new ConciergeServiceClient(address, insecure);
    const agents = new AgentServiceClient(address, insecure);
    const list = await unary<ConciergeRequest, ConciergeResponse>(concierge.list.bind(concierge), {});
    expect(list.agents).toEqual(expectedAgents);

    const fn = await unary<FunctionRequest, FunctionResponse>(agents.function.bind(agents), { agent_name: "greeter" });
    expect(fn.function).toEqual(expectedGreeterFunction);

    const connectivity = await unary<ConnectivityRequest, ConnectivityResponse>(agents.connectivity.bind(agents), {
      agent_name: "greeter",
    });
    expect(connectivity.connectivity_info.map((info) => [info.origin, info.tools, info.display_as])).toEqual([
      ["Greeter", ["Helper"], "llm_agent"],
      ["Helper", [], "llm_agent"],
    ]);

    const request: ChatRequest = {
      agent_name: "greeter",
      user_message: { type: ChatMessage_ChatMessageType.HUMAN, text: "hi", mime_data: [], origin: [], tool_result_origin: [] },
      sly_data: { user: "ada" },
      chat_filter: { chat_filter_type: ChatFilter_ChatFilterType.MINIMAL },
    };
    const responses = await collect(agents.streamingChat(request));
    expect(responses).toHaveLength(1);
    expect(responses[0]?.response?.type).toBe(ChatMessage_ChatMessageType.AGENT_FRAMEWORK);
    expect(responses[0]?.response?.sly_data).toEqual({ user: "ada" });
    concierge.close();
    agents.close();
  });

  it("decodes NOT_FOUND with ErrorInfo from grpc-status-details-bin", async () => {
    const agents = new AgentServiceClient(address, insecure);
    const error = await unary<FunctionRequest, FunctionResponse>(agents.function.bind(agents), { agent_name: "nobody" }).catch(
      (e: grpc.ServiceError) => e,
    );
    expect((error as grpc.ServiceError).code).toBe(grpc.status.NOT_FOUND);
    expect(errorInfoOf(error as grpc.ServiceError)).toMatchObject({ reason: "AGENT_NOT_FOUND", domain: "axon" });

    const streamError = await collect(agents.streamingChat({ agent_name: "nobody" })).catch((e: grpc.ServiceError) => e);
    expect((streamError as grpc.ServiceError).code).toBe(grpc.status.NOT_FOUND);
    agents.close();
  });

  it("cancels the running chat when the client cancels the call", async () => {
    const agents = new AgentServiceClient(address, insecure);
    const before = chats.cancelled.length;
    const call = agents.streamingChat({
      agent_name: "greeter",
      user_message: { type: 0, text: "hang", mime_data: [], origin: [], tool_result_origin: [] },
      chat_filter: { chat_filter_type: ChatFilter_ChatFilterType.MAXIMAL },
    });
    call.on("error", () => {});
    await new Promise((resolve) => call.once("data", resolve));
    call.cancel();
    await chats.whenCancelled(before + 1);
    agents.close();
  });

  it("cancels the running chat when the deadline passes", async () => {
    const agents = new AgentServiceClient(address, insecure);
    const before = chats.cancelled.length;
    const call = agents.streamingChat(
      { agent_name: "greeter", user_message: { type: 0, text: "hang", mime_data: [], origin: [], tool_result_origin: [] } },
      { deadline: Date.now() + 300 },
    );
    const error = await collect(call).catch((e: grpc.ServiceError) => e);
    expect((error as grpc.ServiceError).code).toBe(grpc.status.DEADLINE_EXCEEDED);
    await chats.whenCancelled(before + 1);
    agents.close();
  });
});

describe("gRPC with @grpc/proto-loader (as clients in other languages load .proto files)", () => {
  const definition = protoLoader.loadSync(
    ["neuro_san/api/grpc/agent.proto", "neuro_san/api/grpc/concierge.proto"],
    { includeDirs: [path.join(projectRoot, "proto"), path.join(projectRoot, "third_party")], keepCase: true, enums: String },
  );
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const pkg = grpc.loadPackageDefinition(definition) as any;
  const ns = pkg.dev.cognizant_ai.neuro_san.api.grpc;

  it("lists, describes and chats with the package-qualified paths", async () => {
    const concierge = new ns.concierge.ConciergeService(address, insecure);
    const agents = new ns.agent.AgentService(address, insecure);
    const list = await unary(concierge.List.bind(concierge), {});
    expect(list).toEqual({ agents: expectedAgents });
    const fn = await unary<object, { function: { description: string } }>(agents.Function.bind(agents), { agent_name: "greeter" });
    expect(fn.function.description).toBe(expectedGreeterFunction.description);
    const responses = await collect<{ response: { type: string; text: string } }>(
      agents.StreamingChat({ agent_name: "greeter", user_message: { text: "yo" }, chat_filter: { chat_filter_type: "MAXIMAL" } }),
    );
    expect(responses.map((r) => r.response.type)).toEqual(["AGENT", "AI", "AGENT_FRAMEWORK"]);
    expect(responses.at(-1)?.response.text).toBe("echo yo (turn 1)");
    concierge.close();
    agents.close();
  });
});

describe("neuro-san's legacy method paths /<agent>.AgentService/<Method>", () => {
  // neuro-san's clients name the agent in the service and send no agent_name field.
  const legacyClient = (agent: string) =>
    new (grpc.makeGenericClientConstructor(
      {
        Function: {
          path: `/${agent}.AgentService/Function`,
          requestStream: false,
          responseStream: false,
          requestSerialize: (value: FunctionRequest) => Buffer.from(FunctionRequest.encode(value).finish()),
          requestDeserialize: (bytes: Buffer) => FunctionRequest.decode(bytes),
          responseSerialize: (value: FunctionResponse) => Buffer.from(FunctionResponse.encode(value).finish()),
          responseDeserialize: (bytes: Buffer) => FunctionResponse.decode(bytes),
        },
        StreamingChat: {
          path: `/${agent}.AgentService/StreamingChat`,
          requestStream: false,
          responseStream: true,
          requestSerialize: (value: ChatRequest) => Buffer.from(ChatRequest.encode(value).finish()),
          requestDeserialize: (bytes: Buffer) => ChatRequest.decode(bytes),
          responseSerialize: (value: ChatResponse) => Buffer.from(ChatResponse.encode(value).finish()),
          responseDeserialize: (bytes: Buffer) => ChatResponse.decode(bytes),
        },
      },
      "AgentService",
    ))(address, insecure) as unknown as grpc.Client & {
      Function: (req: FunctionRequest, cb: (e: grpc.ServiceError | null, r: FunctionResponse) => void) => void;
      StreamingChat: (req: ChatRequest) => grpc.ClientReadableStream<ChatResponse>;
    };

  it("serves Function for the agent in the path", async () => {
    const client = legacyClient("greeter");
    const response = await unary(client.Function.bind(client), { agent_name: "" });
    expect(response.function).toEqual(expectedGreeterFunction);
    client.close();
  });

  it("serves StreamingChat for the agent in the path", async () => {
    const client = legacyClient("greeter");
    const responses = await collect(
      client.StreamingChat({
        agent_name: "",
        user_message: { type: ChatMessage_ChatMessageType.HUMAN, text: "legacy", mime_data: [], origin: [], tool_result_origin: [] },
      }),
    );
    expect(responses).toHaveLength(1);
    expect(responses[0]?.response).toMatchObject({ type: ChatMessage_ChatMessageType.AGENT_FRAMEWORK, text: "echo legacy (turn 1)" });
    client.close();
  });

  it("answers an unknown agent in the path with NOT_FOUND and ErrorInfo", async () => {
    const client = legacyClient("nobody");
    const error = (await unary(client.Function.bind(client), { agent_name: "" }).catch((e: unknown) => e)) as grpc.ServiceError;
    expect(error.code).toBe(grpc.status.NOT_FOUND);
    expect(errorInfoOf(error)).toMatchObject({ reason: "AGENT_NOT_FOUND", metadata: { agent_name: "nobody" } });
    client.close();
  });
});
