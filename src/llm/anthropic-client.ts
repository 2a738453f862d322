import Anthropic, { APIConnectionError, APIConnectionTimeoutError, APIError } from "@anthropic-ai/sdk";
import type { JsonObject } from "@bufbuild/protobuf";
import { alternatingTurns } from "./alternating-turns.js";
import type { ModelConfig } from "./config.js";
import type { Connection } from "./connection.js";
import type { LlmClient, LlmMessage, LlmRequest, LlmResponse, LlmTool, LlmToolCall } from "./llm.js";
import { usageWithCost } from "./prices.js";
import { ProviderFailure, safeErrorType } from "./provider-failure.js";
import { objectSchema, parseToolArguments } from "./tools.js";

/** The Messages API requires `max_tokens`; this is used when the config sets none. */
export const ANTHROPIC_DEFAULT_MAX_TOKENS = 4096;

type MessagesBody = Omit<Anthropic.MessageCreateParamsNonStreaming, "stream">;

/** Anthropic Messages with tool use. */
export class AnthropicMessagesClient implements LlmClient {
  readonly description: string;
  readonly provider = "anthropic" as const;
  readonly model: string;
  private readonly sdk: Anthropic;

  constructor(
    private readonly config: ModelConfig,
    connection: Connection,
  ) {
    this.model = config.model;
    this.description = `anthropic ${config.model}`;
    // Key and URL passed explicitly so the SDK reads no credentials of its own from process.env or profile files.
    this.sdk = new Anthropic({
      apiKey: connection.apiKey,
      baseURL: connection.baseUrl,
      maxRetries: config.maxRetries,
      timeout: config.timeoutMs,
      logLevel: "off",
    });
  }

  async complete(request: LlmRequest): Promise<LlmResponse> {
    const body = this.requestBody(request);
    try {
      return this.config.streaming
        ? await this.completeStreaming(body, request.signal)
        : await this.completeAtOnce(body, request.signal);
    } catch (error) {
      request.signal.throwIfAborted();
      throw toProviderFailure(error);
    }
  }

  private requestBody(request: LlmRequest): MessagesBody {
    const system = request.messages.flatMap((message) => (message.role === "system" ? [message.content] : []));
    const { temperature } = this.config;
    return {
      model: this.config.providerModel,
      max_tokens: this.config.maxTokens ?? ANTHROPIC_DEFAULT_MAX_TOKENS,
      ...(system.length === 0 ? {} : { system: system.join("\n\n") }),
      messages: toAnthropicMessages(request.messages),
      ...(request.tools.length === 0 ? {} : { tools: request.tools.map(toAnthropicTool) }),
      ...(temperature === undefined ? {} : { temperature }),
      // Checked against Anthropic's table when the config was read (`model-options.ts`).
      ...(this.config.requestFields as Partial<MessagesBody>),
    };
  }

  private async completeAtOnce(body: MessagesBody, signal: AbortSignal): Promise<LlmResponse> {
    const message = await this.sdk.messages.create({ ...body, stream: false }, { signal });
    let text = "";
    const toolCalls: LlmToolCall[] = [];
    for (const block of message.content) {
      if (block.type === "text") text += block.text;
      if (block.type === "tool_use") toolCalls.push(toolCallFromInput(block.id, block.name, block.input));
    }
    return { text, toolCalls, usage: this.usage(message.usage), model: message.model || this.model };
  }

  private async completeStreaming(body: MessagesBody, signal: AbortSignal): Promise<LlmResponse> {
    const stream = await this.sdk.messages.create({ ...body, stream: true }, { signal });
    let text = "";
    // Blocks by index: a tool_use block's input arrives as pieces of JSON text.
    const toolBlocks = new Map<number, { id: string; name: string; json: string }>();
    let usage: Partial<Anthropic.MessageDeltaUsage> = {};
    let answeredBy = "";
    for await (const event of stream) {
      switch (event.type) {
        case "message_start":
          usage = event.message.usage;
          answeredBy = event.message.model;
          break;
        case "content_block_start":
          if (event.content_block.type === "text") text += event.content_block.text;
          if (event.content_block.type === "tool_use") {
            toolBlocks.set(event.index, { id: event.content_block.id, name: event.content_block.name, json: "" });
          }
          break;
        case "content_block_delta":
          if (event.delta.type === "text_delta") text += event.delta.text;
          if (event.delta.type === "input_json_delta") {
            const block = toolBlocks.get(event.index);
            if (block) block.json += event.delta.partial_json;
          }
          break;
        case "message_delta":
          // Counts here are cumulative for the message; input counts may be absent.
          usage = { ...usage, ...withoutNulls(event.usage) };
          break;
      }
    }
    const toolCalls = [...toolBlocks.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, block]) => ({ id: block.id, name: block.name, ...parseToolArguments(block.json) }));
    return { text, toolCalls, usage: this.usage(usage), model: answeredBy || this.model };
  }

  private usage(usage: Partial<Anthropic.MessageDeltaUsage>) {
    // Cached prompt tokens are still prompt tokens; Anthropic counts them apart from input_tokens.
    const promptTokens =
      (usage.input_tokens ?? 0) + (usage.cache_creation_input_tokens ?? 0) + (usage.cache_read_input_tokens ?? 0);
    return usageWithCost(this.model, promptTokens, usage.output_tokens ?? 0);
  }
}

function withoutNulls<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, entry]) => entry !== null)) as Partial<T>;
}

function toolCallFromInput(id: string, name: string, input: unknown): LlmToolCall {
  if (typeof input === "object" && input !== null && !Array.isArray(input)) {
    return { id, name, arguments: input as JsonObject };
  }
  return { id, name, arguments: {}, argumentsError: "the arguments are not a JSON object" };
}

function toAnthropicMessages(messages: LlmMessage[]): Anthropic.MessageParam[] {
  return alternatingTurns<Anthropic.ContentBlockParam>(messages, {
    text: (text) => ({ type: "text", text }),
    toolResult: (toolCallId, content) => ({ type: "tool_result", tool_use_id: toolCallId, content }),
    toolUse: (call) => ({ type: "tool_use", id: call.id, name: call.name, input: call.arguments }),
  });
}

function toAnthropicTool(tool: LlmTool): Anthropic.Tool {
  return {
    name: tool.name,
    description: tool.description,
    input_schema: objectSchema(tool.parameters) as Anthropic.Tool.InputSchema,
  };
}

function toProviderFailure(error: unknown): ProviderFailure {
  if (error instanceof ProviderFailure) return error;
  if (error instanceof APIConnectionTimeoutError) return new ProviderFailure("timeout");
  if (error instanceof APIConnectionError) return new ProviderFailure("connection");
  if (error instanceof APIError && error.status !== undefined) {
    return new ProviderFailure(String(error.status), safeErrorType(error.type ?? error.errorCode));
  }
  return new ProviderFailure("bad_response");
}
