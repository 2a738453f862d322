import { create } from "@bufbuild/protobuf";
import {
  ChatContextSchema,
  ChatMessage_ChatMessageType as MessageType,
  type ChatContext,
  type ChatMessage,
  type Origin,
} from "../gen/neuro_san/api/grpc/chat_pb.js";
import type { LlmMessage } from "../llm/llm.js";

/** The front man's instructions never travel to the client; the server puts its own back. */
export const redactedSystemText = "<redacted>";

/**
 * The conversation so far, from the chat_context the client carried back: the front man's HUMAN and AI
 * messages (its history is the one whose origin ends with it), newest `maxMessages` kept.
 */
export function previousTurns(chatContext: ChatContext | undefined, frontMan: string, maxMessages?: number): ChatMessage[] {
  const histories = chatContext?.chatHistories ?? [];
  const history = histories.find((candidate) => candidate.origin.at(-1)?.tool === frontMan) ?? histories[0];
  const turns = (history?.messages ?? []).filter((m) => m.type === MessageType.HUMAN || m.type === MessageType.AI);
  return maxMessages === undefined ? turns : turns.slice(-maxMessages);
}

export function asLlmMessages(turns: ChatMessage[]): LlmMessage[] {
  return turns.map((m) => (m.type === MessageType.HUMAN ? { role: "user", content: m.text } : { role: "assistant", content: m.text }));
}

/** What the client keeps for the next turn: the front man's history, first SYSTEM redacted. */
export function nextChatContext(origin: Origin[], turns: Pick<ChatMessage, "type" | "text">[], maxMessages?: number): ChatContext {
  const kept = maxMessages === undefined ? turns : turns.slice(-maxMessages);
  return create(ChatContextSchema, {
    chatHistories: [
      {
        origin,
        messages: [{ type: MessageType.SYSTEM, text: redactedSystemText, origin }, ...kept.map((m) => ({ type: m.type, text: m.text, origin }))],
      },
    ],
  });
}
