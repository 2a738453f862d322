import type { JsonObject } from "@bufbuild/protobuf";
import type { ChatFilter_ChatFilterType as ChatFilterType } from "../gen/neuro_san/api/grpc/agent_pb.js";
import type { ChatContext, ChatMessage } from "../gen/neuro_san/api/grpc/chat_pb.js";
import type { MimeData } from "../gen/neuro_san/api/grpc/mime_data_pb.js";
import type { AgentNetwork } from "./agent-network.js";

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
  /** The authenticated client, when the transport knows it: who an operator is told asked for a held tool call. */
  clientId?: string;
  /**
   * What the caller passes on (StreamingChat's chat_filter): a runner may leave the other messages out where they are
   * made (the chat thread does, so they never cross). Absent: every message.
   */
  filter?: ChatFilterType;
}

/**
 * Runs chats. `start` validates the turn and throws before anything is streamed (so REST can still answer a
 * plain HTTP error); the messages it returns end with exactly one AGENT_FRAMEWORK message.
 */
export interface ChatRunner {
  start(turn: ChatTurn): Promise<AsyncIterable<ChatMessage>>;
}
