import { toJson } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorInfoSchema } from "../../src/gen/google/rpc/error_details_pb.js";
import {
  AgentService,
  ChatFilter_ChatFilterType as ChatFilterType,
  ConnectivityResponseSchema,
  FunctionResponseSchema,
} from "../../src/gen/neuro_san/api/grpc/agent_pb.js";
import { ChatMessage_ChatMessageType as MessageType } from "../../src/gen/neuro_san/api/grpc/chat_pb.js";
import { ConciergeResponseSchema, ConciergeService } from "../../src/gen/neuro_san/api/grpc/concierge_pb.js";
import { ScriptedChats } from "../support/scripted-chat.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { expectedAgents, expectedGreeterFunction, expectedRelayConnectivity, fixtureEnv } from "./expectations.js";

let server: TestServer;
let chats: ScriptedChats;
beforeAll(async () => {
  chats = new ScriptedChats();
  server = await startTestServer({ env: fixtureEnv, chats });
});
afterAll(() => server.close());

const transports: Record<string, (baseUrl: string) => Transport> = {
  "Connect JSON over HTTP/1.1": (baseUrl) => createConnectTransport({ baseUrl, httpVersion: "1.1" }),
  "Connect binary over HTTP/2": (baseUrl) => createConnectTransport({ baseUrl, httpVersion: "2", useBinaryFormat: true }),
  "gRPC over HTTP/2": (baseUrl) => createGrpcTransport({ baseUrl }),
  "gRPC-Web over HTTP/1.1": (baseUrl) => createGrpcWebTransport({ baseUrl, httpVersion: "1.1" }),
};

describe.each(Object.entries(transports))("%s", (_name, makeTransport) => {
  const concierge = () => createClient(ConciergeService, makeTransport(server.url));
  const agents = () => createClient(AgentService, makeTransport(server.url));

  it("lists the public networks in manifest order", async () => {
    const response = await concierge().list({});
    expect(toJson(ConciergeResponseSchema, response)).toEqual({ agents: expectedAgents });
  });

  it("returns the front man's function block", async () => {
    const response = await agents().function({ agentName: "greeter" });
    expect(toJson(FunctionResponseSchema, response)).toEqual({ function: expectedGreeterFunction });
  });

  it("returns connectivity front man first, with external agents and display_as defaults", async () => {
    const response = await agents().connectivity({ agentName: "relay" });
    expect((toJson(ConnectivityResponseSchema, response) as { connectivity_info: unknown }).connectivity_info).toEqual(expectedRelayConnectivity);
  });

  it("serves a private network by name", async () => {
    const response = await agents().connectivity({ agentName: "backroom" });
    expect(response.connectivityInfo.map((info) => info.origin)).toEqual(["Keeper"]);
  });

  it("streams only the final AGENT_FRAMEWORK message under MINIMAL", async () => {
    const responses = [];
    for await (const response of agents().streamingChat({
      agentName: "greeter",
      userMessage: { text: "hi" },
      slyData: { user: "ada" },
    })) {
      responses.push(response);
    }
    expect(responses).toHaveLength(1);
    expect(responses[0]!.request).toBeUndefined();
    expect(responses[0]!.response).toMatchObject({ type: MessageType.AGENT_FRAMEWORK, text: "echo hi (turn 1)", slyData: { user: "ada" } });
  });

  it("streams every message with content and echoes the request under MAXIMAL", async () => {
    const types = [];
    for await (const response of agents().streamingChat({
      agentName: "greeter",
      userMessage: { text: "hello" },
      chatFilter: { chatFilterType: ChatFilterType.MAXIMAL },
    })) {
      expect(response.request?.userMessage?.text).toBe("hello");
      types.push(response.response?.type);
    }
    expect(types).toEqual([MessageType.AGENT, MessageType.AI, MessageType.AGENT_FRAMEWORK]);
  });

  it("answers an unknown agent with NOT_FOUND and an ErrorInfo on every method", async () => {
    const calls = [
      () => agents().function({ agentName: "nobody" }),
      () => agents().connectivity({ agentName: "nobody" }),
      async () => {
        for await (const _ of agents().streamingChat({ agentName: "nobody", userMessage: { text: "x" } }));
      },
    ];
    for (const call of calls) {
      const error = await call().then(() => undefined, (e: unknown) => ConnectError.from(e));
      expect(error?.code).toBe(Code.NotFound);
      expect(error?.findDetails(ErrorInfoSchema)[0]).toMatchObject({
        reason: "AGENT_NOT_FOUND",
        domain: "axon",
        metadata: { agent_name: "nobody" },
      });
    }
  });

  it("reports a failure after the stream started with its code and ErrorInfo", async () => {
    const received = [];
    const error = await (async () => {
      for await (const response of agents().streamingChat({
        agentName: "greeter",
        userMessage: { text: "fail midway" },
        chatFilter: { chatFilterType: ChatFilterType.MAXIMAL },
      })) {
        received.push(response);
      }
    })().then(() => undefined, (e: unknown) => ConnectError.from(e));
    expect(received.length).toBe(2);
    expect(error?.code).toBe(Code.Unavailable);
    expect(error?.findDetails(ErrorInfoSchema)[0]?.reason).toBe("SCRIPTED_FAILURE");
  });

  it("cancels the chat when the client aborts", async () => {
    const before = chats.cancelled.length;
    const abort = new AbortController();
    const stream = agents().streamingChat(
      { agentName: "greeter", userMessage: { text: "hang" }, chatFilter: { chatFilterType: ChatFilterType.MAXIMAL } },
      { signal: abort.signal },
    );
    const iterator = stream[Symbol.asyncIterator]();
    await iterator.next(); // the chat is running
    abort.abort();
    await expect(iterator.next()).rejects.toThrow();
    await chats.whenCancelled(before + 1);
    expect(chats.cancelled.length).toBe(before + 1);
  });
});
