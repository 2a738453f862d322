import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { AxonError, Code } from "../errors.js";
import { isJsonObject } from "../json.js";
import { laxBoolean, laxNumber } from "./lax-scalars.js";
import { classInInfo, EMPTY_LLM_INFO, modelInInfo, type LlmInfo } from "./llm-info.js";
import { requestFieldsOf } from "./model-options.js";
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
  /** The provider's endpoint from the config (`base_url` and its provider-specific spellings); else the environment's. */
  baseUrl?: string;
  /** Azure only. */
  apiVersion?: string;
  /** Azure only; the model name when absent. */
  deployment?: string;
  /** OpenAI only: `openai_organization`. */
  organization?: string;
  /** Bedrock only: `region_name`; else the AWS environment's. */
  region?: string;
  /** Per HTTP attempt; the agent's own deadline aborts the whole call sooner. */
  timeoutMs: number;
  /** Transient failures (429, 5xx, 408, connection errors, timeouts) are retried this many times before a fallback. */
  maxRetries: number;
  streaming: boolean;
  /** Every other model option, as fields of the provider's request body (`model-options.ts`). */
  requestFields: JsonObject;
  /** Credential keys whose value is `"sly_data"`: each request's `sly_data.llm_config` supplies them. */
  clientKeys: string[];
}

/** neuro-san's default when a network names no model. */
export const DEFAULT_MODEL = "gpt-4o";
export const DEFAULT_TIMEOUT_SECONDS = 120;
export const DEFAULT_MAX_RETRIES = 3;

/** The value neuro-san writes for a key the client supplies in `sly_data.llm_config`. */
const FROM_SLY_DATA = "sly_data";

/** Where each provider's endpoint may be written, first wins; the environment fills it when none is. */
const ENDPOINT_KEYS: Record<ProviderClass, string[]> = {
  openai: ["base_url", "openai_api_base"],
  "openai-compatible": ["base_url", "openai_api_base"],
  "azure-openai": ["azure_endpoint", "base_url", "openai_api_base"],
  anthropic: ["base_url", "anthropic_api_url"],
  ollama: ["base_url"],
  gemini: ["base_url"],
  nvidia: ["base_url", "nvidia_base_url"],
  openrouter: ["base_url", "openrouter_api_base", "openai_api_base"],
  bedrock: ["endpoint_url", "base_url"],
};

/**
 * The credentials neuro-san lets a network take from the client (`"openai_api_key": "sly_data"`): the lower-case
 * names of each provider's variables. Written with any other value they are refused: keys never live in network files.
 */
const CLIENT_KEYS: Record<ProviderClass, string[]> = {
  openai: ["openai_api_key"],
  "openai-compatible": ["openai_api_key"],
  "azure-openai": ["openai_api_key", "azure_openai_api_key"],
  anthropic: ["anthropic_api_key"],
  ollama: [],
  gemini: ["google_api_key"],
  nvidia: ["nvidia_api_key"],
  openrouter: ["openrouter_api_key"],
  bedrock: ["aws_access_key_id", "aws_secret_access_key", "aws_session_token"],
};

/** Keys that describe where one provider lives: they never carry over to an agent that picked another provider. */
const CONNECTION_KEYS = [
  ...new Set([...Object.values(ENDPOINT_KEYS).flat(), "api_version", "openai_api_version", "deployment_name", "azure_deployment", "region_name"]),
];

/** Settings a fallback entry inherits from the config that lists it (unlike endpoints, they mean the same to every provider). */
const SHARED_KEYS = ["temperature", "max_tokens", "timeout_seconds", "request_timeout", "streaming", "max_retries"];

/** Timeouts in seconds, as each provider's LangChain class spells them; Axon's own `timeout_seconds` first. */
const TIMEOUT_KEYS = ["timeout_seconds", "request_timeout", "default_request_timeout", "timeout"];

/** Keys of every llm_config that only Axon's plumbing reads; the rest are model options or credentials. */
const GENERAL_KEYS = new Set(["model_name", "class", "fallbacks", "temperature", "max_tokens", "streaming", "max_retries", ...TIMEOUT_KEYS]);

/** Azure's own connection keys. */
const AZURE_KEYS = new Set(["api_version", "openai_api_version", "deployment_name", "azure_deployment"]);

/** Secrets never come from network files (they end up in git); keys come from the environment or the client. */
const SECRET_KEY_PATTERN = /(^|_)(key|secret|password|auth_token|access_token|key_id|session_token)$/i;

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

/** Whether a config (or one of its fallbacks) takes a key from the client: its LLM client must not outlive the request. */
export function takesClientKeys(llmConfig: JsonObject): boolean {
  const fallbacks = Array.isArray(llmConfig["fallbacks"]) ? llmConfig["fallbacks"] : [];
  return [llmConfig, ...fallbacks].some(
    (config) => isJsonObject(config) && Object.values(config).some((value) => typeof value === "string" && value.toLowerCase() === FROM_SLY_DATA),
  );
}

/**
 * The models to try in order: the config itself, then its `fallbacks`. A config that names no model but lists
 * fallbacks is neuro-san's form, where the list is the whole chain.
 */
export function resolveLlmChain(networkConfig: JsonObject, info: LlmInfo = EMPTY_LLM_INFO): ModelConfig[] {
  const llmConfig = withDefaultConfig(networkConfig, info.defaultConfig);
  const fallbacks = llmConfig["fallbacks"];
  if (fallbacks === undefined || fallbacks === null) return [resolveModelConfig(llmConfig, "llm_config", info)];
  if (!Array.isArray(fallbacks) || fallbacks.length === 0) throw invalidConfig("fallbacks", "a non-empty list");
  const shared = pick(llmConfig, SHARED_KEYS);
  const entries = fallbacks.map((entry, index) => {
    const path = `fallbacks[${index}]`;
    if (!isJsonObject(entry)) throw invalidConfig(path, "an llm_config object");
    if ("fallbacks" in entry) throw invalidConfig(`${path}.fallbacks`, "absent: fallbacks do not nest");
    return resolveModelConfig({ ...shared, ...entry }, path, info);
  });
  const namesPrimary = "model_name" in llmConfig || "class" in llmConfig;
  return namesPrimary ? [resolveModelConfig(llmConfig, "llm_config", info), ...entries] : entries;
}

/** An info file's `default_config` under the config; a config made of fallbacks alone takes no model from it. */
function withDefaultConfig(config: JsonObject, defaults: JsonObject): JsonObject {
  if (Object.keys(defaults).length === 0) return config;
  const { model_name: _model, class: _class, fallbacks: _fallbacks, ...settings } = defaults;
  return { ...("fallbacks" in config ? settings : defaults), ...config };
}

function resolveModelConfig(written: JsonObject, path: string, info: LlmInfo): ModelConfig {
  const model = optionalString(written, "model_name", path) ?? DEFAULT_MODEL;
  // The info file may rename the model and name its class; a class it defines gives default args and a base class.
  const named = modelInInfo(info, model);
  let className = optionalString(written, "class", path) ?? named.className;
  const defined = className === undefined ? undefined : classInInfo(info, className);
  const config = defined === undefined ? written : { ...defined.args, ...written };
  className = defined?.base ?? className;
  const provider = className === undefined ? inferProviderClass(named.name) : providerClassNamed(className);
  if (provider === undefined) {
    throw new AxonError(Code.FailedPrecondition, "LLM_PROVIDER_UNSUPPORTED", "this LLM class is not supported", {
      metadata: { class: className ?? "", model, supported: SUPPORTED_CLASSES.join(" ") },
    });
  }
  const clientKeys = clientKeysOf(config, provider, path);
  const temperature = optionalNumber(config, "temperature", path);
  const maxTokens = optionalNumber(config, "max_tokens", path);
  if (maxTokens !== undefined && !(Number.isInteger(maxTokens) && maxTokens > 0)) {
    throw invalidConfig(`${path}.max_tokens`, "a positive integer");
  }
  const timeoutKey = TIMEOUT_KEYS.find((key) => config[key] !== undefined && config[key] !== null);
  const timeoutSeconds = (timeoutKey === undefined ? undefined : optionalNumber(config, timeoutKey, path)) ?? DEFAULT_TIMEOUT_SECONDS;
  if (!(timeoutSeconds > 0)) throw invalidConfig(`${path}.${timeoutKey ?? "timeout_seconds"}`, "a positive number");
  const maxRetries = optionalNumber(config, "max_retries", path) ?? DEFAULT_MAX_RETRIES;
  if (!(Number.isInteger(maxRetries) && maxRetries >= 0)) throw invalidConfig(`${path}.max_retries`, "an integer of 0 or more");
  const endpointKey = ENDPOINT_KEYS[provider].find((key) => config[key] !== undefined && config[key] !== null);
  const baseUrl = endpointKey === undefined ? undefined : optionalString(config, endpointKey, path);
  const apiVersion = optionalString(config, "api_version", path) ?? optionalString(config, "openai_api_version", path);
  const deployment =
    optionalString(config, "deployment_name", path) ?? optionalString(config, "azure_deployment", path);
  const organization = provider === "openai" ? optionalString(config, "openai_organization", path) : undefined;
  const region = provider === "bedrock" ? optionalString(config, "region_name", path) : undefined;
  const streaming = config["streaming"] === undefined ? undefined : laxBoolean(config["streaming"]);
  if (streaming !== undefined && typeof streaming !== "boolean") throw invalidConfig(`${path}.streaming`, "a boolean");

  // What is left is this provider's model options: each reaches the request body or is refused here.
  const read = new Set([...GENERAL_KEYS, ...ENDPOINT_KEYS[provider], ...CLIENT_KEYS[provider]]);
  if (provider === "azure-openai") for (const key of AZURE_KEYS) read.add(key);
  if (provider === "openai") read.add("openai_organization");
  if (provider === "bedrock") read.add("region_name");
  const options = Object.fromEntries(Object.entries(config).filter(([key]) => !read.has(key)));
  const requestFields = requestFieldsOf(provider, options);
  if ("refused" in requestFields) {
    const { refused } = requestFields;
    const key = `${path}.${refused.key}`;
    if ("expected" in refused) throw invalidConfig(key, refused.expected);
    throw new AxonError(Code.FailedPrecondition, "LLM_CONFIG_INVALID", `this llm_config option cannot be used: ${refused.unsupported}`, {
      metadata: { key, provider },
    });
  }
  return {
    provider,
    model,
    providerModel: providerModelName(named.name, provider),
    ...(temperature === undefined ? {} : { temperature }),
    ...(maxTokens === undefined ? {} : { maxTokens }),
    ...(baseUrl === undefined ? {} : { baseUrl }),
    ...(provider === "azure-openai" && apiVersion !== undefined ? { apiVersion } : {}),
    ...(provider === "azure-openai" && deployment !== undefined ? { deployment } : {}),
    ...(organization === undefined ? {} : { organization }),
    ...(region === undefined ? {} : { region }),
    timeoutMs: Math.round(timeoutSeconds * 1000),
    maxRetries,
    streaming: streaming === true,
    requestFields: requestFields.fields,
    clientKeys,
  };
}

/**
 * The credential keys this config takes from the client. A secret-looking key is allowed only as `"sly_data"`, and
 * only when it is one of this provider's credentials; its value is never quoted back.
 */
function clientKeysOf(config: JsonObject, provider: ProviderClass, path: string): string[] {
  const keys: string[] = [];
  for (const [key, value] of Object.entries(config)) {
    const fromClient = typeof value === "string" && value.toLowerCase() === FROM_SLY_DATA;
    if (fromClient && CLIENT_KEYS[provider].includes(key)) {
      keys.push(key);
    } else if (SECRET_KEY_PATTERN.test(key) || CLIENT_KEYS[provider].includes(key)) {
      throw new AxonError(
        Code.FailedPrecondition,
        "LLM_CONFIG_INVALID",
        "an llm_config holds a secret. Keys come from the environment, or from the client when the value is sly_data",
        { metadata: { key: `${path}.${key}` } },
      );
    } else if (fromClient) {
      throw new AxonError(Code.FailedPrecondition, "LLM_CONFIG_INVALID", "Axon takes only this provider's API keys from sly_data", {
        metadata: { key: `${path}.${key}`, provider },
      });
    }
  }
  return keys;
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
  const written = config[key];
  if (written === undefined || written === null) return undefined;
  const value = laxNumber(written);
  if (typeof value !== "number" || !Number.isFinite(value)) throw invalidConfig(`${path}.${key}`, "a number");
  return value;
}

function invalidConfig(key: string, expected: string): AxonError {
  return new AxonError(Code.FailedPrecondition, "LLM_CONFIG_INVALID", "an llm_config value has the wrong type", {
    metadata: { key, expected },
  });
}
