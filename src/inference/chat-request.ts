import type { JsonObject } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { AxonError, invalidArgument } from "../errors.js";
import { isJsonObject } from "../json.js";

/**
 * The request fields of `POST /v1/chat/completions` as OpenAI documents them (the official SDK's
 * ChatCompletionCreateParams): the only ones forwarded to an upstream. Anything else is refused, so that nothing
 * reaches a provider that policy and the allow-list did not see.
 */
export const chatCompletionFields: ReadonlySet<string> = new Set([
  "messages",
  "model",
  "audio",
  "frequency_penalty",
  "function_call",
  "functions",
  "logit_bias",
  "logprobs",
  "max_completion_tokens",
  "max_tokens",
  "metadata",
  "modalities",
  "moderation",
  "n",
  "parallel_tool_calls",
  "prediction",
  "presence_penalty",
  "prompt_cache_key",
  "prompt_cache_options",
  "prompt_cache_retention",
  "reasoning_effort",
  "response_format",
  "safety_identifier",
  "seed",
  "service_tier",
  "stop",
  "store",
  "stream",
  "stream_options",
  "temperature",
  "tool_choice",
  "tools",
  "top_logprobs",
  "top_p",
  "user",
  "verbosity",
  "web_search_options",
]);

const roles = new Set(["system", "developer", "user", "assistant", "tool", "function"]);

/** A chat completion request, read and checked as far as Axon must: the rest of it is the upstream's to judge. */
export interface ChatRequest {
  /** The body as it arrived, forwarded unchanged unless Axon asks the upstream for usage. */
  raw: Uint8Array;
  body: JsonObject;
  model: string;
  messages: JsonObject[];
  stream: boolean;
  /** `stream_options.include_usage`: the client wants the usage chunk before `[DONE]`. */
  includeUsage: boolean;
  /** `max_completion_tokens`, else the older `max_tokens`; undefined when the request bounds neither. */
  maxTokens: number | undefined;
}

/** Parses the body; refuses what is not a chat completion request, naming the field (`param`). */
export function readChatRequest(raw: Uint8Array): ChatRequest {
  let body: unknown;
  try {
    body = JSON.parse(Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString("utf8"));
  } catch {
    throw invalidArgument("INVALID_JSON", "the request body is not valid JSON");
  }
  if (!isJsonObject(body)) throw invalidArgument("INVALID_REQUEST_BODY", "the request body must be a JSON object");
  const model = body.model;
  if (typeof model !== "string" || model === "") throw invalidParameter("model", "model is required: the name of a model /v1/models lists");
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0) throw invalidParameter("messages", "messages is required: a non-empty list of messages");
  messages.forEach((message, index) => {
    if (!isJsonObject(message) || typeof message.role !== "string" || !roles.has(message.role)) {
      throw invalidParameter(`messages[${index}].role`, `each message is an object whose role is one of ${[...roles].join(", ")}`);
    }
  });
  const stream = body.stream;
  if (stream !== undefined && stream !== null && typeof stream !== "boolean") throw invalidParameter("stream", "stream must be true or false");
  const streamOptions = body.stream_options;
  if (streamOptions !== undefined && streamOptions !== null && !isJsonObject(streamOptions)) throw invalidParameter("stream_options", "stream_options must be an object");
  return {
    raw,
    body,
    model,
    messages: messages as JsonObject[],
    stream: stream === true,
    includeUsage: isJsonObject(streamOptions) && streamOptions.include_usage === true,
    maxTokens: tokenBound(body, "max_completion_tokens") ?? tokenBound(body, "max_tokens"),
  };
}

/** Refuses the first top-level field neither OpenAI documents nor `extraFields` allows (Axon's own, for networks). */
export function refuseUnknownFields(request: ChatRequest, extraFields: readonly string[] = []): void {
  for (const field of Object.keys(request.body)) {
    if (!chatCompletionFields.has(field) && !extraFields.includes(field)) {
      throw new AxonError(Code.InvalidArgument, "UNKNOWN_PARAMETER", `unrecognized request argument supplied ${field}`, {
        fieldViolations: [{ field, description: "not a chat completion request field" }],
      });
    }
  }
}

function tokenBound(body: JsonObject, field: string): number | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1) throw invalidParameter(field, `${field} must be a whole number of at least 1`);
  return value;
}

/** A field of the request that is wrong: OpenAI's `param` names it. */
export function invalidParameter(field: string, message: string): AxonError {
  return new AxonError(Code.InvalidArgument, "INVALID_PARAMETER", message, { fieldViolations: [{ field, description: message }] });
}
