import {
  BedrockRuntimeClient,
  BedrockRuntimeServiceException,
  ConverseCommand,
  ConverseStreamCommand,
  type ContentBlock,
  type ConverseCommandInput,
  type Message,
  type TokenUsage,
  type Tool,
} from "@aws-sdk/client-bedrock-runtime";
import { NodeHttpHandler } from "@smithy/node-http-handler";
import type { DocumentType } from "@smithy/types";
import type { JsonObject } from "@bufbuild/protobuf";
import { alternatingTurns } from "./alternating-turns.js";
import type { ModelConfig } from "./config.js";
import type { BedrockConnection } from "./connection.js";
import type { LlmClient, LlmMessage, LlmRequest, LlmResponse, LlmTool, LlmToolCall } from "./llm.js";
import { usageWithCost } from "./prices.js";
import { ProviderFailure, safeErrorType } from "./provider-failure.js";
import { objectSchema, parseToolArguments } from "./tools.js";

/** Amazon Bedrock's Converse API (and ConverseStream) with tool use, for every model Bedrock serves. */
export class BedrockConverseClient implements LlmClient {
  readonly description: string;
  readonly provider = "bedrock" as const;
  readonly model: string;
  private readonly sdk: BedrockRuntimeClient;

  constructor(
    private readonly config: ModelConfig,
    connection: BedrockConnection,
  ) {
    this.model = config.model;
    this.description = `bedrock ${config.model}`;
    // Without explicit credentials or region the SDK takes the standard AWS chain (variables, profiles, SSO, roles).
    this.sdk = new BedrockRuntimeClient({
      ...(connection.region === undefined ? {} : { region: connection.region }),
      ...(connection.endpoint === undefined ? {} : { endpoint: connection.endpoint }),
      ...(connection.credentials === undefined ? {} : { credentials: connection.credentials }),
      maxAttempts: config.maxRetries + 1,
      // HTTP/1.1 as the other providers' SDKs speak it: Converse and ConverseStream need nothing of HTTP/2.
      requestHandler: new NodeHttpHandler({ requestTimeout: config.timeoutMs, throwOnRequestTimeout: true }),
    });
  }

  async complete(request: LlmRequest): Promise<LlmResponse> {
    const input = this.requestInput(request);
    try {
      return this.config.streaming ? await this.completeStreaming(input, request.signal) : await this.completeAtOnce(input, request.signal);
    } catch (error) {
      request.signal.throwIfAborted();
      throw toProviderFailure(error);
    }
  }

  private requestInput(request: LlmRequest): ConverseCommandInput {
    const system = request.messages.flatMap((message) => (message.role === "system" && message.content !== "" ? [{ text: message.content }] : []));
    const { temperature, maxTokens, requestFields } = this.config;
    // Checked against Bedrock's table when the config was read (`model-options.ts`).
    const { inferenceConfig, ...fields } = requestFields as JsonObject & { inferenceConfig?: JsonObject };
    return {
      modelId: this.config.providerModel,
      messages: toBedrockMessages(request.messages),
      ...(system.length === 0 ? {} : { system }),
      ...(request.tools.length === 0 ? {} : { toolConfig: { tools: request.tools.map(toBedrockTool) } }),
      inferenceConfig: {
        ...(maxTokens === undefined ? {} : { maxTokens }),
        ...(temperature === undefined ? {} : { temperature }),
        ...inferenceConfig,
      },
      ...(fields as Partial<ConverseCommandInput>),
    };
  }

  private async completeAtOnce(input: ConverseCommandInput, signal: AbortSignal): Promise<LlmResponse> {
    const output = await this.sdk.send(new ConverseCommand(input), { abortSignal: signal });
    let text = "";
    const toolCalls: LlmToolCall[] = [];
    for (const block of output.output?.message?.content ?? []) {
      if (block.text !== undefined) text += block.text;
      if (block.toolUse !== undefined) toolCalls.push(toolCallFromInput(block.toolUse.toolUseId ?? "", block.toolUse.name ?? "", block.toolUse.input));
    }
    return { text, toolCalls, usage: this.usage(output.usage), model: this.model };
  }

  private async completeStreaming(input: ConverseCommandInput, signal: AbortSignal): Promise<LlmResponse> {
    const output = await this.sdk.send(new ConverseStreamCommand(input), { abortSignal: signal });
    let text = "";
    // Blocks by index: a toolUse block's input arrives as pieces of JSON text.
    const toolBlocks = new Map<number, { id: string; name: string; json: string }>();
    let usage: TokenUsage | undefined;
    for await (const event of output.stream ?? []) {
      if (event.contentBlockStart?.start?.toolUse !== undefined) {
        const { toolUseId, name } = event.contentBlockStart.start.toolUse;
        toolBlocks.set(event.contentBlockStart.contentBlockIndex ?? 0, { id: toolUseId ?? "", name: name ?? "", json: "" });
      }
      const delta = event.contentBlockDelta?.delta;
      if (delta?.text !== undefined) text += delta.text;
      if (delta?.toolUse?.input !== undefined) {
        const block = toolBlocks.get(event.contentBlockDelta?.contentBlockIndex ?? 0);
        if (block) block.json += delta.toolUse.input;
      }
      if (event.metadata?.usage !== undefined) usage = event.metadata.usage;
      // Errors inside the stream arrive as events of their own.
      const failure = event.internalServerException ?? event.modelStreamErrorException ?? event.throttlingException ?? event.validationException ?? event.serviceUnavailableException;
      if (failure !== undefined) throw failure;
    }
    const toolCalls = [...toolBlocks.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, block]) => ({ id: block.id, name: block.name, ...parseToolArguments(block.json) }));
    return { text, toolCalls, usage: this.usage(usage), model: this.model };
  }

  private usage(usage: TokenUsage | undefined) {
    // Cached prompt tokens are still prompt tokens.
    const promptTokens = (usage?.inputTokens ?? 0) + (usage?.cacheReadInputTokens ?? 0) + (usage?.cacheWriteInputTokens ?? 0);
    return usageWithCost(this.model, promptTokens, usage?.outputTokens ?? 0);
  }
}

function toolCallFromInput(id: string, name: string, input: unknown): LlmToolCall {
  if (typeof input === "object" && input !== null && !Array.isArray(input)) return { id, name, arguments: input as JsonObject };
  return { id, name, arguments: {}, argumentsError: "the arguments are not a JSON object" };
}

/** Converse takes turns as Anthropic's Messages does. */
function toBedrockMessages(messages: LlmMessage[]): Message[] {
  return alternatingTurns<ContentBlock>(messages, {
    text: (text) => ({ text }),
    toolResult: (toolCallId, content) => ({ toolResult: { toolUseId: toolCallId, content: [{ text: content }] } }),
    toolUse: (call) => ({ toolUse: { toolUseId: call.id, name: call.name, input: call.arguments as DocumentType } }),
  });
}

function toBedrockTool(tool: LlmTool): Tool {
  return { toolSpec: { name: tool.name, description: tool.description, inputSchema: { json: objectSchema(tool.parameters) as DocumentType } } };
}

function toProviderFailure(error: unknown): ProviderFailure {
  if (error instanceof ProviderFailure) return error;
  if (error instanceof BedrockRuntimeServiceException) {
    const status = error.$metadata.httpStatusCode;
    return new ProviderFailure(status === undefined ? "bad_response" : String(status), safeErrorType(error.name));
  }
  const name = error instanceof Error ? error.name : "";
  if (name === "TimeoutError") return new ProviderFailure("timeout");
  // No credentials or region found, or the endpoint cannot be reached: nothing answered.
  if (name === "CredentialsProviderError" || /^(ECONNREFUSED|ENOTFOUND|ECONNRESET|EHOSTUNREACH)$/.test(String((error as { code?: unknown }).code ?? ""))) {
    return new ProviderFailure("connection", safeErrorType(name));
  }
  return new ProviderFailure("bad_response");
}
