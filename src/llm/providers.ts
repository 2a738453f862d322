import type { JsonObject } from "@bufbuild/protobuf";
import type { Logger } from "../logger.js";
import { AnthropicMessagesClient } from "./anthropic-client.js";
import { resolveLlmChain, type ModelConfig } from "./config.js";
import { connectionFor, type Environment } from "./connection.js";
import { FallbackChain, type ModelClient } from "./fallback-chain.js";
import type { LlmClient } from "./llm.js";
import { OpenAiChatClient } from "./openai-client.js";

/**
 * The client for one agent's resolved `llm_config` (see `mergeLlmConfig`). Throws at once, before any request, when
 * the config is invalid (LLM_CONFIG_INVALID, LLM_PROVIDER_UNSUPPORTED) or any model of the chain lacks its key or
 * endpoint (LLM_NOT_CONFIGURED): a fallback that could never work is a misconfiguration to report now, not in an outage.
 */
export function createLlmClient(
  llmConfig: JsonObject,
  env: Environment = process.env,
  options: { logger?: Logger } = {},
): LlmClient {
  const models = resolveLlmChain(llmConfig).map((config) => createModelClient(config, env));
  return new FallbackChain(models, options.logger);
}

function createModelClient(config: ModelConfig, env: Environment): ModelClient {
  const connection = connectionFor(config, env);
  return config.provider === "anthropic"
    ? new AnthropicMessagesClient(config, connection)
    : new OpenAiChatClient(config, connection);
}
