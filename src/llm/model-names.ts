/**
 * Which provider owns a model, as neuro-san's LLM info table says (`default_llm_info.hocon`): by `class` when a config
 * names one, else by the model's name. A model is only ever sent to its owner.
 */

/** Every provider a neuro-san network may name. */
export type ProviderClass =
  | "openai"
  | "azure-openai"
  | "anthropic"
  | "ollama"
  | "openai-compatible"
  | "gemini"
  | "nvidia"
  | "openrouter"
  | "bedrock";


/** `class` as neuro-san writes it, or the last segment of a LangChain class path (`langchain_openai.ChatOpenAI`). */
const CLASS_NAMES: Record<string, ProviderClass> = {
  openai: "openai",
  chatopenai: "openai",
  "azure-openai": "azure-openai",
  azure_openai: "azure-openai",
  azure: "azure-openai",
  azurechatopenai: "azure-openai",
  anthropic: "anthropic",
  chatanthropic: "anthropic",
  ollama: "ollama",
  chatollama: "ollama",
  "openai-compatible": "openai-compatible",
  openai_compatible: "openai-compatible",
  gemini: "gemini",
  chatgooglegenerativeai: "gemini",
  nvidia: "nvidia",
  chatnvidia: "nvidia",
  openrouter: "openrouter",
  chatopenrouter: "openrouter",
  bedrock: "bedrock",
  chatbedrock: "bedrock",
  chatbedrockconverse: "bedrock",
};

/**
 * The names in neuro-san's table that stand for another one (`use_model_name`), where the provider would not know
 * them: Anthropic's short names (its API wants dated ids), Gemini's previews, NVIDIA's and Bedrock's catalogue ids.
 * OpenAI's short names are left as written: OpenAI's API resolves them itself.
 */
const MODEL_ALIASES: Record<string, string> = {
  "claude-haiku": "claude-haiku-4-5-20251001",
  "claude-sonnet": "claude-sonnet-4-6",
  "claude-opus": "claude-opus-4-7",
  "claude-3-haiku": "claude-3-haiku-20240307",
  "claude-3-opus": "claude-3-opus-20240229",
  "claude-3-5-haiku": "claude-3-5-haiku-20241022",
  "claude-3-5-sonnet": "claude-3-5-sonnet-20241022",
  "claude-3-7-sonnet": "claude-3-7-sonnet-20250219",
  "claude-sonnet-4-0": "claude-sonnet-4-20250514",
  "claude-opus-4-0": "claude-opus-4-20250514",
  "claude-opus-4-1": "claude-opus-4-1-20250805",
  "claude-haiku-4-5": "claude-haiku-4-5-20251001",
  "claude-sonnet-4-5": "claude-sonnet-4-5-20250929",
  "claude-opus-4-5": "claude-opus-4-5-20251101",
  "gemini-3-pro": "gemini-3-pro-preview",
  "gemini-3-flash": "gemini-3-flash-preview",
  "gemini-3.1-pro": "gemini-3.1-pro-preview",
  "gemini-3.1-pro-customtools": "gemini-3.1-pro-preview-customtools",
  "nvidia-llama-3.1-405b-instruct": "meta/llama-3.1-405b-instruct",
  "nvidia-llama-3.3-70b-instruct": "meta/llama-3.3-70b-instruct",
  "nvidia-deepseek-r1": "deepseek-ai/deepseek-r1",
  "bedrock-us-claude-opus-4": "us.anthropic.claude-opus-4-20250514-v1:0",
  "bedrock-us-claude-sonnet-4": "us.anthropic.claude-sonnet-4-20250514-v1:0",
  "bedrock-us-claude-3-7-sonnet": "us.anthropic.claude-3-7-sonnet-20250219-v1:0",
};

const OLLAMA_FAMILIES =
  /^(llama|codellama|tinyllama|qwen|mistral|mixtral|gemma|phi|deepseek|llava|granite|smollm|starcoder|command-r)/;

export function providerClassNamed(className: string): ProviderClass | undefined {
  const lastSegment = className.split(".").pop() ?? className;
  return CLASS_NAMES[lastSegment.toLowerCase()];
}

export const SUPPORTED_CLASSES = [...new Set(Object.values(CLASS_NAMES))];

/**
 * The provider a model name implies when `class` is absent. Names nobody claims go to OpenAI's protocol, which every
 * local server (vLLM, llama.cpp) speaks behind `OPENAI_BASE_URL`.
 */
export function inferProviderClass(modelName: string): ProviderClass {
  const name = modelName.toLowerCase();
  if (name.startsWith("azure-")) return "azure-openai";
  if (name.startsWith("bedrock-") || /^(us|eu|apac|global)\.anthropic\./.test(name) || name.startsWith("anthropic.")) return "bedrock";
  if (name.startsWith("nvidia-")) return "nvidia";
  if (name.startsWith("gemini-")) return "gemini";
  if (name.startsWith("ft:")) return "openai"; // fine-tuned OpenAI models: ft:gpt-4o-mini:org::id
  if (name.includes(":")) return "ollama"; // Ollama tags: llama3.1:8b, gpt-oss:20b
  if (name.startsWith("claude-")) return "anthropic";
  if (/^(gpt-|chatgpt-|o1|o3|o4)/.test(name)) return "openai";
  if (OLLAMA_FAMILIES.test(name)) return "ollama";
  return "openai";
}

/** The name the provider knows the model by: `azure-gpt-4o` is `gpt-4o` to Azure, an alias is its model. */
export function providerModelName(modelName: string, provider: ProviderClass): string {
  const unaliased = MODEL_ALIASES[modelName] ?? modelName;
  return provider === "azure-openai" && unaliased.startsWith("azure-") ? unaliased.slice("azure-".length) : unaliased;
}
