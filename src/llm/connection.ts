import { AxonError, Code } from "../errors.js";
import type { ModelConfig } from "./config.js";

export type Environment = Readonly<Record<string, string | undefined>>;

/** Where to send one model's requests and with which key. Holds a secret: never log it. */
export interface Connection {
  baseUrl: string;
  apiKey: string;
  /** Azure only. */
  apiVersion?: string;
  /** Azure only: `deployment_name`, else AZURE_OPENAI_DEPLOYMENT_NAME; else the SDK routes by model name. */
  deployment?: string;
}

export const OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1";
export const ANTHROPIC_DEFAULT_BASE_URL = "https://api.anthropic.com";
export const OLLAMA_DEFAULT_HOST = "http://localhost:11434";
export const AZURE_DEFAULT_API_VERSION = "2024-10-21";
/** Gemini's OpenAI-compatible endpoint. */
export const GEMINI_DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta/openai";
/** NVIDIA's hosted models speak OpenAI's protocol here. */
export const NVIDIA_DEFAULT_BASE_URL = "https://integrate.api.nvidia.com/v1";
export const OPENROUTER_DEFAULT_BASE_URL = "https://openrouter.ai/api/v1";

/** A request's `sly_data.llm_config`: the keys its client pays with. Holds secrets: never log it. */
export type ClientKeys = Readonly<Record<string, unknown>>;

/** Local OpenAI-compatible servers (vLLM, llama.cpp, Ollama) ignore the key, but the SDK insists on one. */
const KEYLESS_PLACEHOLDER = "no-key-needed";

/**
 * The endpoint and key of one model, from its config and the environment. Throws LLM_NOT_CONFIGURED naming the
 * missing variable, so a chat is refused before anything is streamed. A key the config takes from the client
 * (`"openai_api_key": "sly_data"`) comes from `clientKeys` instead, and only from there.
 */
export function connectionFor(config: ModelConfig, env: Environment, clientKeys: ClientKeys = {}): Connection {
  const read = variableReader(config, env, clientKeys);
  const require = (name: string, what: "key" | "endpoint"): string =>
    read(name) ?? throwNotConfigured(name, what, config);
  switch (config.provider) {
    case "openai": {
      const customBaseUrl = config.baseUrl ?? read("OPENAI_BASE_URL");
      // A custom endpoint is usually a local server that needs no key.
      const apiKey = read("OPENAI_API_KEY") ?? (customBaseUrl === undefined ? undefined : KEYLESS_PLACEHOLDER);
      return {
        baseUrl: customBaseUrl ?? OPENAI_DEFAULT_BASE_URL,
        apiKey: apiKey ?? throwNotConfigured("OPENAI_API_KEY", "key", config),
      };
    }
    case "openai-compatible":
      return {
        baseUrl: config.baseUrl ?? require("OPENAI_BASE_URL", "endpoint"),
        apiKey: read("OPENAI_API_KEY") ?? KEYLESS_PLACEHOLDER,
      };
    case "ollama":
      return { baseUrl: ollamaOpenAiBaseUrl(config.baseUrl ?? read("OLLAMA_HOST") ?? OLLAMA_DEFAULT_HOST), apiKey: "ollama" };
    case "azure-openai": {
      const endpoint = config.baseUrl ?? require("AZURE_OPENAI_ENDPOINT", "endpoint");
      const deployment = config.deployment ?? read("AZURE_OPENAI_DEPLOYMENT_NAME");
      // LangChain's Azure class spells the client's key openai_api_key; the variable's name works too.
      const clientKey = config.clientKeys.includes("openai_api_key") ? read("OPENAI_API_KEY") : undefined;
      return {
        baseUrl: `${endpoint.replace(/\/+$/, "")}/openai`,
        apiKey: clientKey ?? require("AZURE_OPENAI_API_KEY", "key"),
        apiVersion: config.apiVersion ?? read("OPENAI_API_VERSION") ?? AZURE_DEFAULT_API_VERSION,
        ...(deployment === undefined ? {} : { deployment }),
      };
    }
    case "gemini":
      return {
        baseUrl: config.baseUrl ?? read("GEMINI_BASE_URL") ?? GEMINI_DEFAULT_BASE_URL,
        apiKey: read("GOOGLE_API_KEY") ?? read("GEMINI_API_KEY") ?? throwNotConfigured("GOOGLE_API_KEY", "key", config),
      };
    case "nvidia":
      return {
        baseUrl: config.baseUrl ?? read("NVIDIA_BASE_URL") ?? NVIDIA_DEFAULT_BASE_URL,
        apiKey: require("NVIDIA_API_KEY", "key"),
      };
    case "openrouter":
      return {
        baseUrl: config.baseUrl ?? read("OPENROUTER_API_BASE") ?? OPENROUTER_DEFAULT_BASE_URL,
        apiKey: require("OPENROUTER_API_KEY", "key"),
      };
    case "bedrock":
      // Bedrock signs its requests with AWS credentials rather than sending a key.
      throw new Error("a Bedrock model connects with bedrockConnectionFor");
    case "anthropic":
      return {
        baseUrl: config.baseUrl ?? read("ANTHROPIC_BASE_URL") ?? ANTHROPIC_DEFAULT_BASE_URL,
        apiKey: require("ANTHROPIC_API_KEY", "key"),
      };
  }
}

/** Where a Bedrock model is reached and as whom; what is absent the SDK's standard AWS chain finds. Holds secrets. */
export interface BedrockConnection {
  region?: string;
  /** `endpoint_url` / `base_url`, else AWS_ENDPOINT_URL_BEDROCK_RUNTIME or AWS_ENDPOINT_URL. */
  endpoint?: string;
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
}

/**
 * A Bedrock model's region, endpoint and credentials: from the config, the client (`"aws_access_key_id": "sly_data"`)
 * or the given environment; what none of them sets is left to the SDK's standard chain (profiles, SSO, roles).
 */
export function bedrockConnectionFor(config: ModelConfig, env: Environment, clientKeys: ClientKeys = {}): BedrockConnection {
  const read = variableReader(config, env, clientKeys);
  const region = config.region ?? read("AWS_REGION") ?? read("AWS_DEFAULT_REGION");
  const endpoint = config.baseUrl ?? read("AWS_ENDPOINT_URL_BEDROCK_RUNTIME") ?? read("AWS_ENDPOINT_URL");
  const accessKeyId = read("AWS_ACCESS_KEY_ID");
  const secretAccessKey = read("AWS_SECRET_ACCESS_KEY");
  // The server's session token never goes with the client's keys.
  const clientSigns = config.clientKeys.includes("aws_access_key_id") && !config.clientKeys.includes("aws_session_token");
  const sessionToken = clientSigns ? undefined : read("AWS_SESSION_TOKEN");
  if ((accessKeyId === undefined) !== (secretAccessKey === undefined)) {
    throwNotConfigured(accessKeyId === undefined ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY", "key", config);
  }
  return {
    ...(region === undefined ? {} : { region }),
    ...(endpoint === undefined ? {} : { endpoint }),
    ...(accessKeyId === undefined || secretAccessKey === undefined
      ? {}
      : { credentials: { accessKeyId, secretAccessKey, ...(sessionToken === undefined ? {} : { sessionToken }) } }),
  };
}

/** `OLLAMA_HOST` is written like Ollama's own CLI takes it (`0.0.0.0:11434` or a URL); its OpenAI API is under /v1. */
export function ollamaOpenAiBaseUrl(host: string): string {
  const withScheme = /^https?:\/\//i.test(host) ? host : `http://${host}`;
  const trimmed = withScheme.replace(/\/+$/, "");
  return trimmed.endsWith("/v1") ? trimmed : `${trimmed}/v1`;
}

/**
 * Reads a variable: from the client's keys when the config takes it from the client (its lower-case name, written
 * `"sly_data"`), else from the environment, where an empty value counts as unset.
 */
function variableReader(config: ModelConfig, env: Environment, clientKeys: ClientKeys): (name: string) => string | undefined {
  return (name) => {
    const key = name.toLowerCase();
    if (config.clientKeys.includes(key)) return clientKeyOf(key, clientKeys, config);
    const value = env[name]?.trim();
    return value === undefined || value === "" ? undefined : value;
  };
}

/** The client's key; its absence is the client's to fix, so it is INVALID_ARGUMENT naming the key, never its value. */
function clientKeyOf(key: string, clientKeys: ClientKeys, config: ModelConfig): string {
  const value = clientKeys[key];
  if (typeof value === "string" && value.trim() !== "") return value.trim();
  throw new AxonError(Code.InvalidArgument, "LLM_CLIENT_KEY_MISSING", "this agent network runs on the client's own API key. Send it in sly_data.llm_config", {
    metadata: { key: `sly_data.llm_config.${key}`, model: config.model, provider: config.provider },
  });
}

function throwNotConfigured(variable: string, what: "key" | "endpoint", config: ModelConfig): never {
  throw new AxonError(
    Code.FailedPrecondition,
    "LLM_NOT_CONFIGURED",
    // Says every way to connect one: the provider's variable, a local Ollama, or the demo's scripted LLM.
    `no LLM ${what} is configured for this network. Set ${variable} and restart. Or run Ollama and set OLLAMA_HOST. Or try npm run demo to use the scripted test LLM`,
    { metadata: { variable, model: config.model, provider: config.provider } },
  );
}
