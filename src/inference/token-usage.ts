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
const usageKey = Buffer.from('"usage"');

/**
 * The usage of a whole chat completion body, parsing only its `usage` object: the last `"usage"` key of the body, its
 * object read to the brace that closes it (usage holds numbers and objects of numbers, never a string with a brace).
 */
export function usageIn(body: Buffer): TokenUsage | undefined {
  const key = body.lastIndexOf(usageKey);
  if (key < 0) return undefined;
  const start = body.indexOf(0x7b, key); // {
  // `"usage": null`, or a key of that name inside something else: no usage object follows it.
  if (start < 0 || !/^"usage"\s*:\s*$/.test(body.subarray(key, start).toString("latin1"))) return undefined;
  let depth = 0;
  for (let at = start; at < body.length; at++) {
    const byte = body[at];
    if (byte === 0x7b) depth++;
    else if (byte === 0x7d && --depth === 0) {
      try {
        return usageOf({ usage: JSON.parse(body.subarray(start, at + 1).toString("utf8")) as unknown });
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}
