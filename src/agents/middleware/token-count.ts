import type { LlmMessage } from "../../llm/llm.js";

/**
 * Tokens of a conversation as LangChain's approximate counter has them: about four characters a token (tool calls
 * counted as their JSON), and three more for each message.
 */
export function approximateTokens(messages: readonly LlmMessage[]): number {
  let tokens = 0;
  for (const message of messages) {
    const toolCalls = message.role === "assistant" && message.toolCalls !== undefined ? JSON.stringify(message.toolCalls) : "";
    tokens += Math.ceil((message.content.length + toolCalls.length) / 4) + 3;
  }
  return tokens;
}
