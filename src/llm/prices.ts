import type { LlmUsage } from "./llm.js";

/** US dollars per million tokens, [input, output], at list price. Longest matching prefix wins: dated names included. */
const PRICES_PER_MILLION: [prefix: string, input: number, output: number][] = [
  ["gpt-4o-mini", 0.15, 0.6],
  ["gpt-4o", 2.5, 10],
  ["gpt-4.1-nano", 0.1, 0.4],
  ["gpt-4.1-mini", 0.4, 1.6],
  ["gpt-4.1", 2, 8],
  ["o3-mini", 1.1, 4.4],
  ["o4-mini", 1.1, 4.4],
  ["claude-3-5-haiku", 0.8, 4],
  ["claude-haiku-4-5", 1, 5],
  ["claude-3-5-sonnet", 3, 15],
  ["claude-3-7-sonnet", 3, 15],
  ["claude-sonnet-4", 3, 15],
  ["claude-opus-4", 15, 75],
];

/** Token counts with their cost; 0 for models not in the table (local models cost nothing we can count). */
export function usageWithCost(model: string, promptTokens: number, completionTokens: number): LlmUsage {
  const name = model.toLowerCase();
  let price: (typeof PRICES_PER_MILLION)[number] | undefined;
  for (const entry of PRICES_PER_MILLION) {
    if (name.startsWith(entry[0]) && (price === undefined || entry[0].length > price[0].length)) price = entry;
  }
  const cost = price === undefined ? 0 : (promptTokens * price[1] + completionTokens * price[2]) / 1_000_000;
  return { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens, cost };
}
