/** Why a streamed chat (its HTTP status and json-lines) is not a complete answer, or undefined when it is. */
export function chatError(status: number, lines: string[]): string | undefined {
  if (status !== 200) return `HTTP ${status}: ${lines.join("\n").slice(0, 300)}`;
  // An error after the headers arrives as a last line holding a google.rpc.Status instead of a ChatResponse.
  const last = JSON.parse(lines.at(-1) ?? "{}") as { response?: { type?: string; origin?: unknown } };
  if (last.response?.type !== "AGENT_FRAMEWORK" || last.response.origin !== undefined) {
    return `the stream did not end with the final answer: ${(lines.at(-1) ?? "").slice(0, 300)}`;
  }
  return undefined;
}
