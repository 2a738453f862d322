import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { AxonError, Code } from "../errors.js";
import { isJsonObject } from "../json.js";
import { inferProviderClass, providerClassNamed, providerModelName, SUPPORTED_CLASSES, type ProviderClass } from "./model-names.js";

export type { ProviderClass } from "./model-names.js";

/** One model to call, read from a neuro-san `llm_config`. Where keys and default endpoints come from is `connection.ts`. */
export interface ModelConfig {
  provider: ProviderClass;
  /** As the network names it (`azure-gpt-4o`): what logs and errors say. */
  model: string;
  /** As its provider knows it (`gpt-4o`): what requests carry. */
  providerModel: string;
  /** Sent only when configured: reasoning models refuse a temperature. */
  temperature?: number;
  maxTokens?: number;
  /** `base_url` / `openai_api_base` (`azure_endpoint` for Azure); the environment fills it when absent. */
  baseUrl?: string;
  /** Azure only. */
  apiVersion?: string;
  /** Azure only; the model name when absent. */
  deployment?: string;
  /** Per HTTP attempt; the agent's own deadline aborts the whole call sooner. */
  timeoutMs: number;
  streaming: boolean;
}

/** neuro-san's default when a network names no model. */
export const DEFAULT_MODEL = "gpt-4o";
export const DEFAULT_TIMEOUT_SECONDS = 120;
/** Transient failures (429, 5xx, 408, connection errors, timeouts) are retried this many times before a fallback. */
export const MAX_RETRIES = 3;

/** Keys that describe where one provider lives: they never carry over to an agent that picked another provider. */
const CONNECTION_KEYS = [
  "base_url",
  "openai_api_base",
  "azure_endpoint",
  "api_version",
  "openai_api_version",
  "deployment_name",
  "azure_deployment",
];

/** Settings a fallback entry inherits from the config that lists it (unlike endpoints, they mean the same to every provider). */
const SHARED_KEYS = ["temperature", "max_tokens", "timeout_seconds", "request_timeout", "streaming"];

/** Secrets never come from network files (they end up in git); keys come from the environment only. */
const SECRET_KEY_PATTERN = /(^|_)(key|secret|password|auth_token|access_token)$/i;

/**
 * An agent's `llm_config` overlaid on the network's, key by key. When the agent picks its own model, the network's
 * fallback chain (built around the network's model) is dropped, and so are the network's endpoints if the agent's
 * model lives at another provider.
 */
export function mergeLlmConfig(networkLevel: JsonObject = {}, agentLevel: JsonObject = {}): JsonObject {
  const merged: JsonObject = { ...networkLevel, ...agentLevel };
  const agentPicksModel = "model_name" in agentLevel || "class" in agentLevel;
  if (!agentPicksModel) return merged;
  if (!("fallbacks" in agentLevel)) delete merged["fallbacks"];
  if (providerNamed(networkLevel) !== providerNamed(merged)) {
    for (const key of CONNECTION_KEYS) if (!(key in agentLevel)) delete merged[key];
  }
  return merged;
}

/**
 * The models to try in order: the config itself, then its `fallbacks`. A config that names no model but lists
 * fallbacks is neuro-san's form, where the list is the whole chain.
 */
export function resolveLlmChain(llmConfig: JsonObject): ModelConfig[] {
  const fallbacks = llmConfig["fallbacks"];
  if (fallbacks === undefined || fallbacks === null) return [resolveModelConfig(llmConfig, "llm_config")];
  if (!Array.isArray(fallbacks) || fallbacks.length === 0) throw invalidConfig("fallbacks", "a non-empty list");
  const shared = pick(llmConfig, SHARED_KEYS);
  const entries = fallbacks.map((entry, index) => {
    const path = `fallbacks[${index}]`;
    if (!isJsonObject(entry)) throw invalidConfig(path, "an llm_config object");
    if ("fallbacks" in entry) throw invalidConfig(`${path}.fallbacks`, "absent: fallbacks do not nest");
    return resolveModelConfig({ ...shared, ...entry }, path);
  });
  const namesPrimary = "model_name" in llmConfig || "class" in llmConfig;
  return namesPrimary ? [resolveModelConfig(llmConfig, "llm_config"), ...entries] : entries;
}

function resolveModelConfig(config: JsonObject, path: string): ModelConfig {
  for (const key of Object.keys(config)) {
    if (SECRET_KEY_PATTERN.test(key)) {
      throw new AxonError(
        Code.FailedPrecondition,
        "LLM_CONFIG_INVALID",
        "an llm_config holds a secret. Keys come from the environment only",
        { metadata: { key: `${path}.${key}` } },
      );
    }
  }
  const model = optionalString(config, "model_name", path) ?? DEFAULT_MODEL;
  const className = optionalString(config, "class", path);
  const provider = className === undefined ? inferProviderClass(model) : providerClassNamed(className);
  if (provider === undefined) {
    throw new AxonError(Code.FailedPrecondition, "LLM_PROVIDER_UNSUPPORTED", "this LLM class is not supported", {
      metadata: { class: className ?? "", model, supported: SUPPORTED_CLASSES.join(" ") },
    });
  }
  const temperature = optionalNumber(config, "temperature", path);
  const maxTokens = optionalNumber(config, "max_tokens", path);
  if (maxTokens !== undefined && !(Number.isInteger(maxTokens) && maxTokens > 0)) {
    throw invalidConfig(`${path}.max_tokens`, "a positive integer");
  }
  const timeoutSeconds =
    optionalNumber(config, "timeout_seconds", path) ??
    optionalNumber(config, "request_timeout", path) ??
    DEFAULT_TIMEOUT_SECONDS;
  if (!(timeoutSeconds > 0)) throw invalidConfig(`${path}.timeout_seconds`, "a positive number");
  const baseUrl =
    provider === "azure-openai"
      ? optionalString(config, "azure_endpoint", path) ?? optionalString(config, "base_url", path)
      : optionalString(config, "base_url", path) ?? optionalString(config, "openai_api_base", path);
  const apiVersion = optionalString(config, "api_version", path) ?? optionalString(config, "openai_api_version", path);
  const deployment =
    optionalString(config, "deployment_name", path) ?? optionalString(config, "azure_deployment", path);
  const streaming = config["streaming"];
  if (streaming !== undefined && typeof streaming !== "boolean") throw invalidConfig(`${path}.streaming`, "a boolean");
  return {
    provider,
    model,
    providerModel: providerModelName(model, provider),
    ...(temperature === undefined ? {} : { temperature }),
    ...(maxTokens === undefined ? {} : { maxTokens }),
    ...(baseUrl === undefined ? {} : { baseUrl }),
    ...(provider === "azure-openai" && apiVersion !== undefined ? { apiVersion } : {}),
    ...(provider === "azure-openai" && deployment !== undefined ? { deployment } : {}),
    timeoutMs: Math.round(timeoutSeconds * 1000),
    streaming: streaming === true,
  };
}

function providerNamed(config: JsonObject): ProviderClass | undefined {
  const className = config["class"];
  if (typeof className === "string") return providerClassNamed(className);
  const model = config["model_name"];
  return inferProviderClass(typeof model === "string" ? model : DEFAULT_MODEL);
}

function pick(config: JsonObject, keys: string[]): JsonObject {
  return Object.fromEntries(keys.filter((key) => key in config).map((key) => [key, config[key] as JsonValue]));
}

function optionalString(config: JsonObject, key: string, path: string): string | undefined {
  const value = config[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string" || value === "") throw invalidConfig(`${path}.${key}`, "a non-empty string");
  return value;
}

function optionalNumber(config: JsonObject, key: string, path: string): number | undefined {
  const value = config[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isFinite(value)) throw invalidConfig(`${path}.${key}`, "a number");
  return value;
}

function invalidConfig(key: string, expected: string): AxonError {
  return new AxonError(Code.FailedPrecondition, "LLM_CONFIG_INVALID", "an llm_config value has the wrong type", {
    metadata: { key, expected },
  });
}
