import type { JsonObject } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { AxonError } from "../errors.js";
import type { ChatContext, ChatMessage } from "../gen/neuro_san/api/grpc/chat_pb.js";
import type { MimeData } from "../gen/neuro_san/api/grpc/mime_data_pb.js";
import type { AgentNetwork } from "./network.js";

/** One turn of a conversation with a network, as the transport hands it to the runtime. */
export interface ChatTurn {
  network: AgentNetwork;
  text: string;
  mimeData: MimeData[];
  slyData: JsonObject;
  /** What the client carried back from the previous turn's final message; the server keeps none. */
  chatContext: ChatContext | undefined;
  /** Forwarded request metadata (request_id, user_id, ...). */
  metadata: Record<string, string>;
  /** Aborted when the client goes away, cancels, or its deadline passes. */
  signal: AbortSignal;
}

/**
 * Runs chats. `start` validates the turn and throws before anything is streamed (so REST can still answer a
 * plain HTTP error); the messages it returns end with exactly one AGENT_FRAMEWORK message.
 */
export interface ChatRunner {
  start(turn: ChatTurn): Promise<AsyncIterable<ChatMessage>>;
}

/** What serves chat when no LLM is configured: everything else works, a chat says how to connect one. */
export const unconfiguredChatRunner: ChatRunner = {
  async start() {
    throw new AxonError(
      Code.FailedPrecondition,
      "LLM_NOT_CONFIGURED",
      "no LLM is configured. Set OPENAI_API_KEY (or OPENAI_BASE_URL for a compatible server) or ANTHROPIC_API_KEY or OLLAMA_HOST and restart",
      { metadata: { variables: "OPENAI_API_KEY OPENAI_BASE_URL ANTHROPIC_API_KEY OLLAMA_HOST" } },
    );
  },
};
