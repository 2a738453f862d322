import { randomUUID } from "node:crypto";
import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError, AzureOpenAI } from "openai";
import type { ModelConfig } from "./config.js";
import type { Connection } from "./connection.js";
import type { LlmClient, LlmMessage, LlmRequest, LlmResponse, LlmTool, LlmToolCall } from "./llm.js";
import { usageWithCost } from "./prices.js";
import { ProviderFailure, safeErrorType } from "./provider-failure.js";
import { objectSchema, parseToolArguments } from "./tools.js";

type CompletionBody = Omit<OpenAI.ChatCompletionCreateParamsNonStreaming, "stream">;

/** OpenAI chat completions with tool calling: OpenAI itself, Azure OpenAI, Ollama and any OpenAI-compatible server. */
export class OpenAiChatClient implements LlmClient {
  readonly description: string;
  readonly provider: ModelConfig["provider"];
  readonly model: string;
  private readonly sdk: OpenAI;

  constructor(
    private readonly config: ModelConfig,
    connection: Connection,
  ) {
    this.provider = config.provider;
    this.model = config.model;
    this.description = `${config.provider} ${config.model}`;
    // Everything is passed explicitly so the SDK never reads process.env behind the caller's environment.
    const common = {
      apiKey: connection.apiKey,
      baseURL: connection.baseUrl,
      maxRetries: config.maxRetries,
      timeout: config.timeoutMs,
      logLevel: "off" as const,
    };
    this.sdk =
      config.provider === "azure-openai"
        ? new AzureOpenAI({
            ...common,
            apiVersion: connection.apiVersion ?? "",
            ...(connection.deployment === undefined ? {} : { deployment: connection.deployment }),
          })
        : new OpenAI({ ...common, organization: config.organization ?? null, project: null, adminAPIKey: null, webhookSecret: null });
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

  private requestBody(request: LlmRequest): CompletionBody {
    const { temperature, maxTokens } = this.config;
    // OpenAI's own models want max_completion_tokens (reasoning models refuse max_tokens); other servers know max_tokens.
    const usesOpenAiModels = this.provider === "openai" || this.provider === "azure-openai";
    return {
      model: this.config.providerModel,
      messages: request.messages.map(toOpenAiMessage),
      ...(request.tools.length === 0 ? {} : { tools: request.tools.map(toOpenAiTool) }),
      ...(temperature === undefined ? {} : { temperature }),
      ...(maxTokens === undefined ? {} : usesOpenAiModels ? { max_completion_tokens: maxTokens } : { max_tokens: maxTokens }),
      // Checked against the provider's table when the config was read (`model-options.ts`).
      ...(this.config.requestFields as Partial<CompletionBody>),
    };
  }

  private async completeAtOnce(body: CompletionBody, signal: AbortSignal): Promise<LlmResponse> {
    const completion = await this.sdk.chat.completions.create({ ...body, stream: false }, { signal });
    const message = completion.choices[0]?.message;
    if (message === undefined) throw new ProviderFailure("bad_response");
    const toolCalls = (message.tool_calls ?? []).flatMap((call) =>
      call.type === "function" ? [toolCall(call.id, call.function.name, call.function.arguments)] : [],
    );
    const usage = completion.usage;
    return {
      text: message.content ?? "",
      toolCalls,
      usage: usageWithCost(this.model, usage?.prompt_tokens ?? 0, usage?.completion_tokens ?? 0),
      // The provider's own name of the model that answered (a dated snapshot, a deployment's model).
      model: completion.model || this.model,
    };
  }

  private async completeStreaming(body: CompletionBody, signal: AbortSignal): Promise<LlmResponse> {
    const stream = await this.sdk.chat.completions.create(
      { ...body, stream: true, stream_options: { include_usage: true } },
      { signal },
    );
    let text = "";
    const calls: { id: string; name: string; arguments: string }[] = [];
    let promptTokens = 0;
    let completionTokens = 0;
    let answeredBy = "";
    for await (const chunk of stream) {
      answeredBy ||= chunk.model ?? "";
      if (chunk.usage) {
        promptTokens = chunk.usage.prompt_tokens;
        completionTokens = chunk.usage.completion_tokens;
      }
      const delta = chunk.choices[0]?.delta;
      if (delta === undefined) continue;
      text += delta.content ?? "";
      // A call arrives as fragments sharing its index: id and name first, then pieces of the arguments.
      for (const fragment of delta.tool_calls ?? []) {
        const call = (calls[fragment.index] ??= { id: "", name: "", arguments: "" });
        call.id ||= fragment.id ?? "";
        call.name += fragment.function?.name ?? "";
        call.arguments += fragment.function?.arguments ?? "";
      }
    }
    return {
      text,
      toolCalls: calls.filter((call) => call !== undefined).map((call) => toolCall(call.id, call.name, call.arguments)),
      usage: usageWithCost(this.model, promptTokens, completionTokens),
      model: answeredBy || this.model,
    };
  }
}

function toolCall(id: string, name: string, rawArguments: string): LlmToolCall {
  // Some local servers omit ids; the tool result must still be matched to its call.
  return { id: id || `call_${randomUUID().slice(0, 8)}`, name, ...parseToolArguments(rawArguments) };
}

function toOpenAiMessage(message: LlmMessage): OpenAI.ChatCompletionMessageParam {
  switch (message.role) {
    case "system":
    case "user":
      return { role: message.role, content: message.content };
    case "tool":
      return { role: "tool", tool_call_id: message.toolCallId, content: message.content };
    case "assistant": {
      const toolCalls = message.toolCalls ?? [];
      if (toolCalls.length === 0) return { role: "assistant", content: message.content };
      return {
        role: "assistant",
        content: message.content === "" ? null : message.content,
        tool_calls: toolCalls.map((call) => ({
          id: call.id,
          type: "function" as const,
          function: { name: call.name, arguments: JSON.stringify(call.arguments) },
        })),
      };
    }
  }
}

function toOpenAiTool(tool: LlmTool): OpenAI.ChatCompletionTool {
  return { type: "function", function: { name: tool.name, description: tool.description, parameters: objectSchema(tool.parameters) } };
}

function toProviderFailure(error: unknown): ProviderFailure {
  if (error instanceof ProviderFailure) return error;
  if (error instanceof APIConnectionTimeoutError) return new ProviderFailure("timeout");
  if (error instanceof APIConnectionError) return new ProviderFailure("connection");
  if (error instanceof APIError && error.status !== undefined) {
    return new ProviderFailure(String(error.status), safeErrorType(error.code ?? error.type));
  }
  return new ProviderFailure("bad_response");
}
