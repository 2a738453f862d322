import type { LlmMessage, LlmToolCall } from "./llm.js";

/** How one provider writes each kind of content block. */
export interface TurnBlocks<Block> {
  text(text: string): Block;
  toolResult(toolCallId: string, content: string): Block;
  toolUse(call: LlmToolCall): Block;
}

/**
 * Anthropic's Messages and Bedrock's Converse keep the system prompt apart, want tool results as blocks of a user turn,
 * and want user and assistant turns to alternate: consecutive messages of one side are merged into one turn. Both
 * refuse empty text blocks.
 */
export function alternatingTurns<Block>(messages: LlmMessage[], blocks: TurnBlocks<Block>): { role: "user" | "assistant"; content: Block[] }[] {
  const turns: { role: "user" | "assistant"; content: Block[] }[] = [];
  const append = (role: "user" | "assistant", content: Block[]) => {
    if (content.length === 0) return;
    const last = turns.at(-1);
    if (last?.role === role) last.content.push(...content);
    else turns.push({ role, content });
  };
  const textBlocks = (text: string) => (text === "" ? [] : [blocks.text(text)]);
  for (const message of messages) {
    switch (message.role) {
      case "system":
        break;
      case "user":
        append("user", textBlocks(message.content));
        break;
      case "tool":
        append("user", [blocks.toolResult(message.toolCallId, message.content)]);
        break;
      case "assistant":
        append("assistant", [...textBlocks(message.content), ...(message.toolCalls ?? []).map((call) => blocks.toolUse(call))]);
        break;
    }
  }
  return turns;
}
