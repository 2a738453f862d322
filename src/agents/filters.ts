import { ChatFilter_ChatFilterType as ChatFilterType } from "../gen/neuro_san/api/grpc/agent_pb.js";
import { ChatMessage_ChatMessageType as MessageType, type ChatMessage } from "../gen/neuro_san/api/grpc/chat_pb.js";

/**
 * MINIMAL (also UNKNOWN or anything unrecognized) lets only the final AGENT_FRAMEWORK message through;
 * MAXIMAL lets every message with content through. Both let the empty AGENT_PROGRESS keep-alives through, as neuro-san
 * does: they are what keeps a proxy from cutting a long chat that says nothing else until its end.
 */
export async function* filterChatMessages(
  messages: AsyncIterable<ChatMessage>,
  filter: ChatFilterType,
): AsyncIterable<ChatMessage> {
  const maximal = filter === ChatFilterType.MAXIMAL;
  for await (const message of messages) {
    if (message.type === MessageType.AGENT_FRAMEWORK) yield message;
    else if (message.type === MessageType.AGENT_PROGRESS && !hasContent(message)) yield message;
    else if (maximal && hasContent(message)) yield message;
  }
}

function hasContent(message: ChatMessage): boolean {
  return (
    message.text !== "" ||
    message.structure !== undefined ||
    message.slyData !== undefined ||
    message.chatContext !== undefined ||
    message.mimeData.length > 0
  );
}
