import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { isJsonObject } from "../json.js";
import { laxBoolean, laxNumber } from "./lax-scalars.js";
import type { ProviderClass } from "./model-names.js";

/**
 * The model options of an `llm_config` beyond the ones every provider shares (model, temperature, max_tokens,
 * timeouts, endpoints, keys: `config.ts`): the keys neuro-san documents in the `args` of each LLM class, each either
 * turned into the field of the provider's request body that carries it, or refused with the reason Axon cannot
 * honour it. A key no table knows is refused too: a model option is never dropped in silence.
 */
type Option =
  /** Without `send`, the value goes under the option's own name. */
  | { check: Check; send?: (value: JsonValue) => JsonObject }
  /** Documented by neuro-san, but Axon has no way to pass it on; the reason says what to do instead. */
  | { unsupported: string };

/** Says what is wrong with a value ("a number"), or undefined when it is fine. */
type Check = (value: JsonValue) => string | undefined;

const number: Check = (value) => (typeof value === "number" && Number.isFinite(value) ? undefined : "a number");
const integer: Check = (value) => (Number.isInteger(value) ? undefined : "an integer");
const boolean: Check = (value) => (typeof value === "boolean" ? undefined : "a boolean");
const text: Check = (value) => (typeof value === "string" && value !== "" ? undefined : "a non-empty string");
const object: Check = (value) => (isJsonObject(value) ? undefined : "an object");
const stopList: Check = (value) =>
  typeof value === "string" || (Array.isArray(value) && value.every((item) => typeof item === "string"))
    ? undefined
    : "a string or a list of strings";
const oneOf =
  (...allowed: JsonValue[]): Check =>
  (value) =>
    allowed.includes(value) ? undefined : `one of ${allowed.map((item) => JSON.stringify(item)).join(", ")}`;

/** An option sent as is, under its own name. */
const field = (check: Check): Option => ({ check });

/** What pydantic reads for the fields of these types (see lax-scalars.ts), applied before the check. */
const LAX_READS = new Map<Check, (value: JsonValue) => JsonValue>([
  [number, laxNumber],
  [integer, laxNumber],
  [boolean, laxBoolean],
]);

const NOT_COUNTED = { unsupported: "Axon counts tokens from the provider's own usage report" };
const NO_PROXY = { unsupported: "Axon has no per-model proxy" };

/** Chat completions fields, as OpenAI, Azure OpenAI and OpenAI-compatible servers take them. */
const OPENAI_OPTIONS: Record<string, Option> = {
  top_p: field(number),
  presence_penalty: field(number),
  frequency_penalty: field(number),
  seed: field(integer),
  logprobs: field(boolean),
  top_logprobs: field(integer),
  logit_bias: field(object),
  stop: field(stopList),
  reasoning_effort: field(text),
  verbosity: field(text),
  // LangChain's `reasoning` dict; chat completions carry only its effort.
  reasoning: {
    check: (value) =>
      isJsonObject(value) && Object.keys(value).every((key) => key === "effort") && typeof value["effort"] === "string"
        ? undefined
        : "an object with only effort (chat completions have no reasoning summary)",
    send: (value) => ({ reasoning_effort: (value as JsonObject)["effort"] as string }),
  },
  // neuro-san only ever considers one completion.
  n: { check: oneOf(1), send: () => ({}) },
  openai_proxy: NO_PROXY,
  tiktoken_model_name: NOT_COUNTED,
};

const AZURE_OPTIONS: Record<string, Option> = {
  ...OPENAI_OPTIONS,
  openai_api_type: { check: oneOf("azure"), send: () => ({}) },
  model_version: { unsupported: "Axon sends the deployment's model as named; set model_name instead" },
  azure_ad_token: { unsupported: "Axon authenticates to Azure with AZURE_OPENAI_API_KEY" },
};

const OLLAMA_NATIVE = { unsupported: "Axon reaches Ollama through its OpenAI-compatible API, which has no such option" };

/** Ollama through its OpenAI-compatible API (`/v1`): only the options that API carries. */
const OLLAMA_OPTIONS: Record<string, Option> = {
  top_p: field(number),
  seed: field(integer),
  stop: field(stopList),
  // Ollama's `/v1` takes the thinking switch as reasoning_effort ("none" turns it off).
  reasoning: {
    check: (value) => (typeof value === "boolean" || (typeof value === "string" && value !== "") ? undefined : "a boolean or an effort such as low, medium or high"),
    send: (value) => ({ reasoning_effort: value === false ? "none" : value === true ? "medium" : value }),
  },
  num_predict: { check: integer, send: (value) => ({ max_tokens: value }) },
  mirostat: OLLAMA_NATIVE,
  mirostat_eta: OLLAMA_NATIVE,
  mirostat_tau: OLLAMA_NATIVE,
  num_ctx: OLLAMA_NATIVE,
  num_gpu: OLLAMA_NATIVE,
  num_thread: OLLAMA_NATIVE,
  repeat_last_n: OLLAMA_NATIVE,
  repeat_penalty: OLLAMA_NATIVE,
  tfs_z: OLLAMA_NATIVE,
  top_k: OLLAMA_NATIVE,
  keep_alive: OLLAMA_NATIVE,
};

/** Gemini through Google's OpenAI-compatible endpoint, which maps reasoning_effort onto Gemini's thinking level. */
const GEMINI_OPTIONS: Record<string, Option> = {
  top_p: field(number),
  n: { check: oneOf(1), send: () => ({}) },
  thinking_level: { check: text, send: (value) => ({ reasoning_effort: value }) },
  thinking_budget: { unsupported: "Gemini's OpenAI-compatible API sets thinking by level; use thinking_level" },
  top_k: { unsupported: "Gemini's OpenAI-compatible API has no top_k" },
};

/** OpenRouter's chat completions: OpenAI's sampling fields, its own `reasoning` object and provider routing. */
const OPENROUTER_OPTIONS: Record<string, Option> = {
  top_p: field(number),
  presence_penalty: field(number),
  frequency_penalty: field(number),
  seed: field(integer),
  stop: field(stopList),
  reasoning: field(object),
  openrouter_provider: { check: object, send: (value) => ({ provider: value }) },
  route: field(text),
  session_id: { unsupported: "OpenRouter's chat completions have no session id" },
  trace: { unsupported: "Axon sends no LangChain trace" },
};

const NVIDIA_OPTIONS: Record<string, Option> = {
  top_p: field(number),
  seed: field(integer),
  stop: field(stopList),
};

/** Anthropic Messages fields. */
const ANTHROPIC_OPTIONS: Record<string, Option> = {
  top_k: field(integer),
  top_p: field(number),
  stop_sequences: { check: stopList, send: (value) => ({ stop_sequences: typeof value === "string" ? [value] : value }) },
  // {"type": "enabled", "budget_tokens": N} or {"type": "adaptive"}, passed as Anthropic defines it.
  thinking: field(object),
};

/** Bedrock Converse: inference settings, and the model's own fields (Claude's `thinking`) through model_kwargs. */
const BEDROCK_OPTIONS: Record<string, Option> = {
  top_p: { check: number, send: (value) => ({ inferenceConfig: { topP: value } }) },
  stop_sequences: { check: stopList, send: (value) => ({ inferenceConfig: { stopSequences: typeof value === "string" ? [value] : value } }) },
  model_kwargs: { check: object, send: (value) => ({ additionalModelRequestFields: value }) },
  guardrails: {
    check: (value) =>
      isJsonObject(value) && (value["guardrailIdentifier"] === null || typeof value["guardrailIdentifier"] === "string") ? undefined : "an object with guardrailIdentifier",
    send: (value): JsonObject => {
      const { guardrailIdentifier, guardrailVersion, trace } = value as JsonObject;
      if (typeof guardrailIdentifier !== "string") return {};
      return {
        guardrailConfig: {
          guardrailIdentifier,
          guardrailVersion: typeof guardrailVersion === "string" ? guardrailVersion : "DRAFT",
          ...(typeof trace === "string" ? { trace } : {}),
        },
      };
    },
  },
  // Axon always speaks Converse, which is what this switch turns on in neuro-san.
  beta_use_converse_api: { check: boolean, send: () => ({}) },
  credentials_profile_name: { unsupported: "set AWS_PROFILE: Axon reads AWS credentials from the standard chain" },
  base_model_id: { unsupported: "Axon prices and names the model by model_name" },
  provider: { unsupported: "Axon speaks Converse, which needs no model provider" },
  system_prompt_with_tools: { unsupported: "Converse carries tools natively" },
  cache: { unsupported: "Axon does not cache LLM answers" },
  config: { unsupported: "Axon configures the Bedrock client itself" },
  custom_get_token_ids: NOT_COUNTED,
  metadata: { unsupported: "Axon sends no LangChain run metadata" },
  tags: { unsupported: "Axon sends no LangChain run tags" },
  rate_limiter: { unsupported: "Axon has no client-side rate limiter" },
};

const OPTIONS: Record<ProviderClass, Record<string, Option>> = {
  openai: OPENAI_OPTIONS,
  "openai-compatible": OPENAI_OPTIONS,
  openrouter: OPENROUTER_OPTIONS,
  "azure-openai": AZURE_OPTIONS,
  ollama: OLLAMA_OPTIONS,
  gemini: GEMINI_OPTIONS,
  nvidia: NVIDIA_OPTIONS,
  anthropic: ANTHROPIC_OPTIONS,
  bedrock: BEDROCK_OPTIONS,
};

/** Why one option cannot be used: its value has the wrong shape, or Axon cannot pass it to this provider. */
export type OptionRefusal = { key: string; expected: string } | { key: string; unsupported: string };

/**
 * The request-body fields `options` (the keys of an llm_config that are model options) give this provider, merged
 * one level deep so that two options of one block (Bedrock's inferenceConfig) add up. Null means "not set", as in
 * neuro-san's tables.
 */
export function requestFieldsOf(provider: ProviderClass, options: JsonObject): { fields: JsonObject } | { refused: OptionRefusal } {
  const table = OPTIONS[provider];
  const fields: JsonObject = {};
  for (const [key, written] of Object.entries(options)) {
    if (written === null) continue;
    const option = Object.hasOwn(table, key) ? table[key] : undefined;
    if (option === undefined) return { refused: { key, unsupported: `${provider} models take no such option in Axon` } };
    // neuro-san's own tables write "" for some unset defaults (system_prompt_with_tools, model_version).
    if ("unsupported" in option) {
      if (written === "") continue;
      return { refused: { key, unsupported: option.unsupported } };
    }
    const read = LAX_READS.get(option.check)?.(written) ?? written;
    const wrong = option.check(read);
    if (wrong !== undefined) return { refused: { key, expected: wrong } };
    const sent = option.send === undefined ? { [key]: read } : option.send(read);
    for (const [name, part] of Object.entries(sent)) {
      const existing = fields[name];
      fields[name] = isJsonObject(existing) && isJsonObject(part) ? { ...existing, ...part } : (part as JsonValue);
    }
  }
  return { fields };
}
