/** One request to one model, as the GenAI metrics count it. */
export interface LlmCallRecord {
  provider: string;
  model: string;
  seconds: number;
  /** Absent when the call failed. */
  usage?: { inputTokens: number; outputTokens: number };
  /** The failure's kind (never its message). */
  errorType?: string;
}

const listeners = new Set<(record: LlmCallRecord) => void>();

/**
 * Whoever counts model calls: the server's metrics in the serving thread; in the chat thread, what posts them to it.
 * Returns what unsubscribes.
 */
export function onLlmCall(listener: (record: LlmCallRecord) => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

export function reportLlmCall(record: LlmCallRecord): void {
  for (const listener of listeners) listener(record);
}
