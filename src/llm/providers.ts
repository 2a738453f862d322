import type { JsonObject } from "@bufbuild/protobuf";
import { AxonError } from "../errors.js";
import type { Logger } from "../logger.js";
import { AnthropicMessagesClient } from "./anthropic-client.js";
import { resolveLlmChain, type ModelConfig } from "./config.js";
import { bedrockConnectionFor, connectionFor, type BedrockConnection, type ClientKeys, type Environment } from "./connection.js";
import { FallbackChain, type ModelClient } from "./fallback-chain.js";
import type { LlmClient, LlmRequest, LlmResponse } from "./llm.js";
import type { LlmInfo } from "./llm-info.js";
import { OpenAiChatClient } from "./openai-client.js";

/**
 * Why a model of a chain cannot be called at all: no key or endpoint for it, a key the client should have sent, or a
 * provider Axon has no client for.
 */
const UNUSABLE = new Set(["LLM_NOT_CONFIGURED", "LLM_PROVIDER_UNSUPPORTED", "LLM_CLIENT_KEY_MISSING"]);

/**
 * The client for one agent's resolved `llm_config` (see `mergeLlmConfig`). Throws at once, before any request, when
 * the config is invalid (LLM_CONFIG_INVALID) or no model of the chain can be called (LLM_NOT_CONFIGURED,
 * LLM_PROVIDER_UNSUPPORTED: the first model's reason). A fallback that cannot be called is skipped with a warning, as
 * neuro-san does: a network falling back from OpenAI to Claude to Gemini runs on whichever of them has its key.
 */
export function createLlmClient(
  llmConfig: JsonObject,
  env: Environment = process.env,
  options: { logger?: Logger; clientKeys?: ClientKeys; llmInfo?: LlmInfo } = {},
): LlmClient {
  const chain = resolveLlmChain(llmConfig, options.llmInfo);
  const models: ModelClient[] = [];
  const unusable: AxonError[] = [];
  for (const config of chain) {
    try {
      models.push(createModelClient(config, env, options.clientKeys));
    } catch (error) {
      if (!(error instanceof AxonError && UNUSABLE.has(error.reason))) throw error;
      unusable.push(error);
    }
  }
  if (models.length === 0) throw unusable[0]!;
  for (const { reason, metadata } of unusable) {
    options.logger?.warn({ reason, ...metadata, using: models.map((model) => model.model) }, "LLM fallback skipped: it cannot be called");
  }
  return new FallbackChain(models, options.logger);
}

function createModelClient(config: ModelConfig, env: Environment, clientKeys?: ClientKeys): ModelClient {
  switch (config.provider) {
    case "bedrock":
      return new LazyBedrockClient(config, bedrockConnectionFor(config, env, clientKeys));
    case "anthropic":
      return new AnthropicMessagesClient(config, connectionFor(config, env, clientKeys));
    default:
      return new OpenAiChatClient(config, connectionFor(config, env, clientKeys));
  }
}

/**
 * Bedrock's client, loaded with its first call: the AWS SDK is 1.8 MB of code that a chat on any other provider would
 * otherwise load.
 */
class LazyBedrockClient implements ModelClient {
  readonly provider = "bedrock" as const;
  readonly model: string;
  readonly description: string;
  private client: Promise<LlmClient> | undefined;

  constructor(
    private readonly config: ModelConfig,
    private readonly connection: BedrockConnection,
  ) {
    this.model = config.model;
    this.description = `bedrock ${config.model}`;
  }

  async complete(request: LlmRequest): Promise<LlmResponse> {
    if (this.client === undefined) {
      this.client = import("./bedrock-client.js").then(({ BedrockConverseClient }) => new BedrockConverseClient(this.config, this.connection));
      // A load that failed is tried again by the next call.
      this.client.catch(() => (this.client = undefined));
    }
    return (await this.client).complete(request);
  }
}
