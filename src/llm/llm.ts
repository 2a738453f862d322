import type { JsonObject } from "@bufbuild/protobuf";

/**
 * The one small interface every LLM provider implements. The agent runtime speaks only this; provider SDKs
 * (OpenAI-compatible chat completions, Anthropic messages) stay behind it.
 */
export interface LlmClient {
  /** For logs and errors: provider and model, never a key. */
  readonly description: string;
  complete(request: LlmRequest): Promise<LlmResponse>;
}

/** `id`: what a message is known by to middleware that replaces or removes messages (LangChain's message ids). */
export type LlmMessage =
  | { role: "system"; content: string; id?: string }
  | { role: "user"; content: string; id?: string }
  | { role: "assistant"; content: string; toolCalls?: LlmToolCall[]; id?: string }
  | { role: "tool"; toolCallId: string; content: string; id?: string };

export interface LlmToolCall {
  id: string;
  name: string;
  /** Parsed arguments; malformed JSON from the model arrives as `{}` plus `argumentsError`. */
  arguments: JsonObject;
  argumentsError?: string;
}

export interface LlmTool {
  name: string;
  description: string;
  /** JSON schema of the arguments object. */
  parameters: JsonObject;
}

export interface LlmRequest {
  messages: LlmMessage[];
  tools: LlmTool[];
  /** Aborting it aborts the HTTP request in flight. */
  signal: AbortSignal;
}

export interface LlmUsage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
  /** US dollars, when the model's price is known; else 0. */
  cost: number;
}

export interface LlmResponse {
  text: string;
  toolCalls: LlmToolCall[];
  usage: LlmUsage;
  /** The model that actually answered, as the provider names it (a fallback may have; a dated snapshot of the one asked for). */
  model: string;
}
