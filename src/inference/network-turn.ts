import { create, fromJson, type JsonObject } from "@bufbuild/protobuf";
import { nextChatContext } from "../agents/chat-context.js";
import type { AgentNetwork } from "../agents/agent-network.js";
import { ChatContextSchema, ChatMessage_ChatMessageType as MessageType, OriginSchema, type ChatContext } from "../gen/neuro_san/api/grpc/chat_pb.js";
import { isJsonObject } from "../json.js";
import { invalidParameter, type ChatRequest } from "./chat-request.js";

/** Axon's own top-level fields of a request to a network model, beside OpenAI's. */
export const networkFields = ["sly_data", "chat_context"] as const;

/** One StreamingChat turn, read from a chat completion request. */
export interface NetworkTurn {
  text: string;
  slyData: JsonObject;
  chatContext: ChatContext | undefined;
}

/**
 * The last message (a user's) is the input. The conversation before it is the `chat_context` the previous answer
 * returned, carried back as it was (the exact continuation), or else the earlier user and assistant messages as the
 * front man's history; system and tool messages are the network's own business and are not read.
 */
export function networkTurnOf(request: ChatRequest, network: AgentNetwork): NetworkTurn {
  const last = request.messages.length - 1;
  const input = request.messages[last]!;
  if (input.role !== "user") throw invalidParameter(`messages[${last}].role`, "the last message to an agent network must be the user's");
  const text = textOf(input.content);
  if (text === "") throw invalidParameter(`messages[${last}].content`, "the last message must say something: its text is empty");

  const slyData = request.body.sly_data ?? {};
  if (!isJsonObject(slyData)) throw invalidParameter("sly_data", "sly_data must be an object");
  return { text, slyData, chatContext: request.body.chat_context === undefined ? historyOf(request.messages.slice(0, last), network) : carriedBack(request.body.chat_context) };
}

function carriedBack(value: unknown): ChatContext {
  if (!isJsonObject(value)) throw invalidParameter("chat_context", "chat_context must be the object a previous answer returned");
  try {
    return fromJson(ChatContextSchema, value);
  } catch {
    throw invalidParameter("chat_context", "chat_context is not the chat_context a previous answer returned");
  }
}

function historyOf(earlier: JsonObject[], network: AgentNetwork): ChatContext | undefined {
  const turns = earlier.flatMap((message) => {
    if (message.role === "user") return [{ type: MessageType.HUMAN, text: textOf(message.content) }];
    if (message.role === "assistant") return [{ type: MessageType.AI, text: textOf(message.content) }];
    return [];
  });
  if (turns.length === 0) return undefined;
  const origin = [create(OriginSchema, { tool: network.frontMan.name, instantiationIndex: 1 })];
  return nextChatContext(origin, turns);
}

/** A message's text: a string, or the text of its text parts (images and audio are not for a network). */
export function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((part) => (isJsonObject(part) && part.type === "text" && typeof part.text === "string" ? part.text : "")).join("");
}
