import { isJsonObject } from "../json.js";

/** The tokens one chat completion used, as OpenAI's `usage` counts them. */
export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

/** The `usage` of a chat completion or of a stream's usage chunk; undefined when it has none (or `usage: null`). */
export function usageOf(answer: unknown): TokenUsage | undefined {
  if (!isJsonObject(answer) || !isJsonObject(answer.usage)) return undefined;
  const { prompt_tokens: prompt, completion_tokens: completion, total_tokens: total } = answer.usage;
  const promptTokens = count(prompt);
  const completionTokens = count(completion);
  return { promptTokens, completionTokens, totalTokens: typeof total === "number" ? count(total) : promptTokens + completionTokens };
}

function count(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) && value > 0 ? Math.floor(value) : 0;
}

/** Where to look for a usage object without parsing what cannot hold one. */
export const usageMarker = Buffer.from('"prompt_tokens"');
