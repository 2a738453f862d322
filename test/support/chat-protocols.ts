import { fromJson, toJson } from "@bufbuild/protobuf";
import { createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { AgentService, ChatFilter_ChatFilterType as ChatFilterType, ChatResponseSchema } from "../../src/gen/neuro_san/api/grpc/agent_pb.js";
import { ChatContextSchema } from "../../src/gen/neuro_san/api/grpc/chat_pb.js";
import type { TestServer } from "./server.js";

export type Json = Record<string, any>;

/** One StreamingChat turn over some protocol, as lines of canonical JSON (what REST sends). */
export type Chat = (server: Pick<TestServer, "url">, network: string, body: Json) => Promise<Json[]>;

/** REST: neuro-san's json-lines stream, each line parsed; a refusal before the stream is one line with its HTTP status. */
export const restChat: Chat = async (server, network, body) => {
  const response = await fetch(`${server.url}/api/v1/${encodeURIComponent(network)}/streaming_chat`, { method: "POST", body: JSON.stringify(body) });
  const text = await response.text();
  if (response.status !== 200) return [{ http_status: response.status, ...JSON.parse(text) }];
  return text.split("\n").filter(Boolean).map((line) => JSON.parse(line));
};

/** Connect and gRPC: the same ChatResponses, rendered as the canonical JSON REST sends. */
function rpcChat(makeTransport: (baseUrl: string) => Transport): Chat {
  return async (server, network, body) => {
    const client = createClient(AgentService, makeTransport(server.url));
    const lines: Json[] = [];
    try {
      for await (const response of client.streamingChat({
        agentName: network,
        userMessage: { text: body.user_message.text },
        slyData: body.sly_data,
        chatFilter: { chatFilterType: body.chat_filter?.chat_filter_type === "MAXIMAL" ? ChatFilterType.MAXIMAL : ChatFilterType.MINIMAL },
        ...(body.chat_context ? { chatContext: fromJson(ChatContextSchema, body.chat_context) } : {}),
      })) {
        lines.push(toJson(ChatResponseSchema, response) as Json);
      }
    } catch (error) {
      lines.push({ rpc_error: String(error) });
    }
    return lines;
  };
}

export const protocols: [string, Chat][] = [
  ["REST json-lines", restChat],
  ["Connect", rpcChat((baseUrl) => createConnectTransport({ baseUrl, httpVersion: "1.1" }))],
  ["gRPC", rpcChat((baseUrl) => createGrpcTransport({ baseUrl }))],
];

export const maximal = { chat_filter_type: "MAXIMAL" };
export const messagesOf = (lines: Json[]) => lines.map((line) => line.response).filter(Boolean);
export const finalOf = (lines: Json[]) => messagesOf(lines).at(-1);
