import { fromJson, toJson, type JsonValue } from "@bufbuild/protobuf";
import { createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { AgentService, ChatRequestSchema, ChatResponseSchema } from "../gen/neuro_san/api/grpc/agent_pb.js";
import { CHAT_PROTOCOLS } from "./chat-protocols.js";
import type { Json } from "./context.js";
import { CliFailure, ExitStatus } from "./cli-failure.js";
import { failureFromStatusJson } from "./failure.js";
import { linesOf, RestClient } from "./rest-client.js";


/** One StreamingChat call: the ChatRequest and every ChatResponse as neuro-san's JSON (snake_case). */
export type StreamingChat = (network: string, request: Json, signal: AbortSignal) => AsyncIterable<Json>;

export function streamingChatOver(protocol: string, baseUrl: string): StreamingChat {
  switch (protocol) {
    case "http":
      return restStreamingChat(baseUrl);
    case "connect":
      return rpcStreamingChat(createConnectTransport({ baseUrl, httpVersion: "1.1" }));
    case "grpc":
      return rpcStreamingChat(createGrpcTransport({ baseUrl }));
    case "grpc-web":
      return rpcStreamingChat(createGrpcWebTransport({ baseUrl, httpVersion: "1.1" }));
    default:
      throw new CliFailure(`--protocol must be one of ${CHAT_PROTOCOLS.join(", ")}`, ExitStatus.usage);
  }
}

/** POST /api/v1/{network}/streaming_chat: json-lines; a line holding a google.rpc.Status is an error after the headers. */
function restStreamingChat(baseUrl: string): StreamingChat {
  const rest = new RestClient(baseUrl);
  return async function* (network, request, signal) {
    const response = await rest.open("POST", `/api/v1/${encodeURIComponent(network)}/streaming_chat`, { body: request, signal });
    for await (const line of linesOf(response)) {
      if (line.trim() === "") continue;
      const message = JSON.parse(line) as Json;
      if (message.response === undefined && typeof message.code === "number") throw failureFromStatusJson(message);
      yield message;
    }
  };
}

/** The generated Connect-ES client; messages cross as their canonical JSON so the chat loop sees one shape. */
function rpcStreamingChat(transport: Transport): StreamingChat {
  const agents = createClient(AgentService, transport);
  return async function* (network, request, signal) {
    const message = fromJson(ChatRequestSchema, { ...request, agent_name: network } as JsonValue);
    for await (const response of agents.streamingChat(message, { signal })) {
      yield toJson(ChatResponseSchema, response) as Json;
    }
  };
}
