import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AxonError, Code } from "../../src/errors.js";
import { mergeLlmConfig, resolveLlmChain } from "../../src/llm/config.js";
import { inferProviderClass } from "../../src/llm/model-names.js";
import { bedrockConnectionFor, connectionFor, ollamaOpenAiBaseUrl } from "../../src/llm/connection.js";
import { createLlmClient } from "../../src/llm/providers.js";
import { ScriptedLlm } from "../support/scripted-llm/scripted-llm.js";

function thrown(action: () => unknown): AxonError {
  try {
    action();
  } catch (error) {
    expect(error).toBeInstanceOf(AxonError);
    return error as AxonError;
  }
  throw new Error("expected an AxonError");
}

describe("the provider a model name implies", () => {
  it.each([
    ["gpt-4o-mini", "openai"],
    ["gpt-4.1", "openai"],
    ["o1-preview", "openai"],
    ["o3-mini", "openai"],
    ["o4-mini", "openai"],
    ["chatgpt-4o-latest", "openai"],
    ["ft:gpt-4o-mini:acme::abc123", "openai"],
    ["claude-3-5-haiku-latest", "anthropic"],
    ["claude-sonnet-4-5", "anthropic"],
    ["llama3.1", "ollama"],
    ["qwen2.5-coder", "ollama"],
    ["mistral", "ollama"],
    ["gemma2", "ollama"],
    ["phi3", "ollama"],
    ["gpt-oss:20b", "ollama"],
    ["some-model:latest", "ollama"],
    ["my-finetune", "openai"],
    // neuro-san's table: provider prefixes.
    ["azure-gpt-4o", "azure-openai"],
    ["azure-o3-mini", "azure-openai"],
    ["gemini-2.5-flash", "gemini"],
    ["gemini-3-pro", "gemini"],
    ["bedrock-us-claude-3-7-sonnet", "bedrock"],
    ["us.anthropic.claude-sonnet-4-20250514-v1:0", "bedrock"],
    ["nvidia-llama-3.3-70b-instruct", "nvidia"],
  ])("%s -> %s", (model, provider) => {
    expect(inferProviderClass(model)).toBe(provider);
  });

  it.each([
    ["azure-gpt-4o", "gpt-4o"],
    ["gemini-3-flash", "gemini-3-flash-preview"],
    ["claude-sonnet", "claude-sonnet-4-6"],
    // neuro-san's table: Anthropic's API wants the dated ids of the short names.
    ["claude-3-7-sonnet", "claude-3-7-sonnet-20250219"],
    ["claude-3-5-haiku", "claude-3-5-haiku-20241022"],
    ["claude-sonnet-4-0", "claude-sonnet-4-20250514"],
    ["claude-opus-4-1", "claude-opus-4-1-20250805"],
    ["claude-sonnet-4-5", "claude-sonnet-4-5-20250929"],
    ["claude-3-5-haiku-latest", "claude-3-5-haiku-latest"],
    ["nvidia-deepseek-r1", "deepseek-ai/deepseek-r1"],
    ["bedrock-us-claude-3-7-sonnet", "us.anthropic.claude-3-7-sonnet-20250219-v1:0"],
    // OpenAI resolves its own short names.
    ["gpt-4o-mini", "gpt-4o-mini"],
  ])("%s is sent to its provider as %s", (model, providerModel) => {
    expect(resolveLlmChain({ model_name: model })[0]).toMatchObject({ model, providerModel });
  });

  it("an explicit class wins, in neuro-san's or LangChain's spelling", () => {
    expect(resolveLlmChain({ model_name: "gpt-4o", class: "azure-openai" })[0]?.provider).toBe("azure-openai");
    expect(resolveLlmChain({ model_name: "x", class: "langchain_anthropic.chat_models.ChatAnthropic" })[0]?.provider).toBe(
      "anthropic",
    );
    expect(resolveLlmChain({ model_name: "x", class: "openai-compatible" })[0]?.provider).toBe("openai-compatible");
  });

  it("an unknown class is refused, naming it", () => {
    const error = thrown(() => resolveLlmChain({ model_name: "x-model", class: "langchain_mystery.ChatMystery" }));
    expect(error.code).toBe(Code.FailedPrecondition);
    expect(error.reason).toBe("LLM_PROVIDER_UNSUPPORTED");
    expect(error.metadata).toMatchObject({ class: "langchain_mystery.ChatMystery", model: "x-model" });
  });

  it("Bedrock: region and endpoint from the config or AWS's variables, keys from the variables; else the SDK's standard chain", () => {
    const [bedrock] = resolveLlmChain({ model_name: "bedrock-us-claude-3-7-sonnet" });
    expect(bedrockConnectionFor(bedrock!, {})).toEqual({});
    const env = { AWS_REGION: "us-west-2", AWS_ENDPOINT_URL: "http://localstack:4566", AWS_ACCESS_KEY_ID: "AKIA1", AWS_SECRET_ACCESS_KEY: "s", AWS_SESSION_TOKEN: "t" };
    expect(bedrockConnectionFor(bedrock!, env)).toEqual({
      region: "us-west-2",
      endpoint: "http://localstack:4566",
      credentials: { accessKeyId: "AKIA1", secretAccessKey: "s", sessionToken: "t" },
    });
    const [configured] = resolveLlmChain({ model_name: "bedrock-us-claude-3-7-sonnet", region_name: "eu-central-1", endpoint_url: "http://vpc-endpoint" });
    expect(bedrockConnectionFor(configured!, { ...env, AWS_ENDPOINT_URL_BEDROCK_RUNTIME: "http://other" })).toMatchObject({ region: "eu-central-1", endpoint: "http://vpc-endpoint" });
    expect(thrown(() => bedrockConnectionFor(bedrock!, { AWS_ACCESS_KEY_ID: "AKIA1" })).metadata["variable"]).toBe("AWS_SECRET_ACCESS_KEY");
  });
});

describe("merging the network's llm_config with an agent's", () => {
  it("the agent's keys overlay the network's", () => {
    expect(mergeLlmConfig({ model_name: "gpt-4o-mini", temperature: 0.7 }, { temperature: 0 })).toEqual({
      model_name: "gpt-4o-mini",
      temperature: 0,
    });
  });

  it("either side may be absent", () => {
    expect(mergeLlmConfig(undefined, { model_name: "gpt-4o" })).toEqual({ model_name: "gpt-4o" });
    expect(mergeLlmConfig({ model_name: "gpt-4o" }, undefined)).toEqual({ model_name: "gpt-4o" });
    expect(mergeLlmConfig()).toEqual({});
  });

  it("an agent that picks its own model drops the network's fallbacks", () => {
    const network = { model_name: "gpt-4o", fallbacks: [{ model_name: "gpt-4o-mini" }] };
    expect(mergeLlmConfig(network, { model_name: "gpt-4.1" })).toEqual({ model_name: "gpt-4.1" });
    expect(mergeLlmConfig(network, { temperature: 0 })).toEqual({ ...network, temperature: 0 });
  });

  it("the network's endpoint stays with its provider", () => {
    const network = { model_name: "llama3.1", base_url: "http://gpu-box:11434", temperature: 0.5 };
    expect(mergeLlmConfig(network, { model_name: "qwen2.5" })).toEqual({ ...network, model_name: "qwen2.5" });
    expect(mergeLlmConfig(network, { model_name: "claude-sonnet-4-5" })).toEqual({
      model_name: "claude-sonnet-4-5",
      temperature: 0.5,
    });
  });
});

describe("the chain of models an llm_config describes", () => {
  it("defaults to neuro-san's gpt-4o, not streaming, with a 120 s attempt timeout", () => {
    expect(resolveLlmChain({})).toEqual([
      { provider: "openai", model: "gpt-4o", providerModel: "gpt-4o", timeoutMs: 120_000, maxRetries: 3, streaming: false, requestFields: {}, clientKeys: [] },
    ]);
  });

  it("reads temperature, max_tokens, timeout_seconds, streaming and base_url", () => {
    const [config] = resolveLlmChain({
      model_name: "gpt-4o-mini",
      temperature: 0,
      max_tokens: 512,
      timeout_seconds: 30,
      streaming: true,
      openai_api_base: "http://localhost:8000/v1",
    });
    expect(config).toEqual({
      provider: "openai",
      model: "gpt-4o-mini",
      providerModel: "gpt-4o-mini",
      temperature: 0,
      maxTokens: 512,
      timeoutMs: 30_000,
      maxRetries: 3,
      streaming: true,
      baseUrl: "http://localhost:8000/v1",
      requestFields: {},
      clientKeys: [],
    });
  });

  it("reads numbers and booleans written as strings, as neuro-san's pydantic models do", () => {
    const [config] = resolveLlmChain({ model_name: "gpt-4o-mini", temperature: "0.5", max_tokens: " 512 ", max_retries: "1", streaming: "True", top_p: "0.9", logprobs: "no" });
    expect(config).toMatchObject({ temperature: 0.5, maxTokens: 512, maxRetries: 1, streaming: true, requestFields: { top_p: 0.9, logprobs: false } });
  });

  it("the primary comes first, then the fallbacks, which inherit settings but not endpoints", () => {
    const chain = resolveLlmChain({
      model_name: "llama3.1",
      base_url: "http://gpu-box:11434",
      temperature: 0.3,
      fallbacks: [{ model_name: "gpt-4o-mini" }, { model_name: "claude-3-5-haiku-latest", temperature: 1 }],
    });
    expect(chain.map((config) => [config.provider, config.model, config.temperature, config.baseUrl])).toEqual([
      ["ollama", "llama3.1", 0.3, "http://gpu-box:11434"],
      ["openai", "gpt-4o-mini", 0.3, undefined],
      ["anthropic", "claude-3-5-haiku-latest", 1, undefined],
    ]);
  });

  it("without a model of its own, neuro-san's form: the fallbacks are the whole chain", () => {
    const chain = resolveLlmChain({ fallbacks: [{ model_name: "gpt-4" }, { model_name: "gpt-4o" }] });
    expect(chain.map((config) => config.model)).toEqual(["gpt-4", "gpt-4o"]);
  });

  it.each([
    [{ fallbacks: [{ model_name: "a", fallbacks: [{ model_name: "b" }] }] }, "fallbacks[0].fallbacks"],
    [{ fallbacks: "gpt-4o" }, "fallbacks"],
    [{ fallbacks: [] }, "fallbacks"],
    [{ temperature: "hot" }, "llm_config.temperature"],
    [{ max_tokens: 0 }, "llm_config.max_tokens"],
    [{ streaming: "sometimes" }, "llm_config.streaming"],
    [{ temperature: "0.5x" }, "llm_config.temperature"],
    [{ max_tokens: "12.5" }, "llm_config.max_tokens"],
  ])("refuses %j, naming %s", (config, key) => {
    const error = thrown(() => resolveLlmChain(config));
    expect(error.reason).toBe("LLM_CONFIG_INVALID");
    expect(error.metadata["key"]).toBe(key);
  });

  it.each(["api_key", "openai_api_key", "anthropic_api_key"])("refuses a secret under %s without quoting it", (key) => {
    const error = thrown(() => resolveLlmChain({ model_name: "gpt-4o", fallbacks: [{ model_name: "x", [key]: "sk-leaked" }] }));
    expect(error.code).toBe(Code.FailedPrecondition);
    expect(error.reason).toBe("LLM_CONFIG_INVALID");
    expect(error.metadata["key"]).toBe(`fallbacks[0].${key}`);
    expect(JSON.stringify([error.message, error.metadata])).not.toContain("sk-leaked");
  });
});

describe("endpoints and keys from the environment", () => {
  const [openai] = resolveLlmChain({ model_name: "gpt-4o" });
  const [anthropic] = resolveLlmChain({ model_name: "claude-sonnet-4-5" });
  const [ollama] = resolveLlmChain({ model_name: "llama3.1" });
  const [azure] = resolveLlmChain({ class: "azure-openai", model_name: "gpt-4o" });
  const [compatible] = resolveLlmChain({ class: "openai-compatible", model_name: "local" });

  it("OpenAI: the key, and OPENAI_BASE_URL when set", () => {
    expect(connectionFor(openai!, { OPENAI_API_KEY: "k" })).toEqual({ apiKey: "k", baseUrl: "https://api.openai.com/v1" });
    expect(connectionFor(openai!, { OPENAI_API_KEY: "k", OPENAI_BASE_URL: "http://vllm:8000/v1" }).baseUrl).toBe(
      "http://vllm:8000/v1",
    );
  });

  it("OpenAI: OPENAI_BASE_URL without a key is a local server, reached with a placeholder key", () => {
    expect(connectionFor(openai!, { OPENAI_BASE_URL: "http://vllm:8000/v1" }).apiKey).toBe("no-key-needed");
  });

  it("Anthropic: ANTHROPIC_API_KEY, and ANTHROPIC_BASE_URL when set", () => {
    expect(connectionFor(anthropic!, { ANTHROPIC_API_KEY: "a" })).toEqual({ apiKey: "a", baseUrl: "https://api.anthropic.com" });
    expect(connectionFor(anthropic!, { ANTHROPIC_API_KEY: "a", ANTHROPIC_BASE_URL: "http://proxy" }).baseUrl).toBe("http://proxy");
  });

  it("Ollama: OLLAMA_HOST (default localhost:11434) plus /v1, no key", () => {
    expect(connectionFor(ollama!, {}).baseUrl).toBe("http://localhost:11434/v1");
    expect(connectionFor(ollama!, { OLLAMA_HOST: "0.0.0.0:11434" }).baseUrl).toBe("http://0.0.0.0:11434/v1");
    expect(ollamaOpenAiBaseUrl("https://ollama.example/v1/")).toBe("https://ollama.example/v1");
  });

  it("Azure: key, endpoint, OPENAI_API_VERSION and AZURE_OPENAI_DEPLOYMENT_NAME", () => {
    const env = { AZURE_OPENAI_API_KEY: "z", AZURE_OPENAI_ENDPOINT: "https://acme.openai.azure.com/", OPENAI_API_VERSION: "2025-01-01" };
    expect(connectionFor(azure!, env)).toEqual({
      apiKey: "z",
      baseUrl: "https://acme.openai.azure.com/openai",
      apiVersion: "2025-01-01",
    });
    expect(connectionFor(azure!, { ...env, AZURE_OPENAI_DEPLOYMENT_NAME: "prod" }).deployment).toBe("prod");
    const [named] = resolveLlmChain({ model_name: "azure-gpt-4o", deployment_name: "from-config", openai_api_version: "2024-06-01" });
    expect(connectionFor(named!, { ...env, AZURE_OPENAI_DEPLOYMENT_NAME: "prod" })).toMatchObject({ deployment: "from-config", apiVersion: "2024-06-01" });
  });

  it("Gemini: GOOGLE_API_KEY at Google's OpenAI-compatible endpoint, or GEMINI_BASE_URL", () => {
    const [gemini] = resolveLlmChain({ model_name: "gemini-2.5-flash" });
    expect(connectionFor(gemini!, { GOOGLE_API_KEY: "g" })).toEqual({ apiKey: "g", baseUrl: "https://generativelanguage.googleapis.com/v1beta/openai" });
    expect(connectionFor(gemini!, { GEMINI_API_KEY: "g2", GEMINI_BASE_URL: "http://proxy/v1" })).toEqual({ apiKey: "g2", baseUrl: "http://proxy/v1" });
    expect(thrown(() => connectionFor(gemini!, { OPENAI_API_KEY: "k" })).metadata["variable"]).toBe("GOOGLE_API_KEY");
  });

  it.each([
    ["openai", () => connectionFor(openai!, { ANTHROPIC_API_KEY: "a" }), "OPENAI_API_KEY", "key"],
    ["anthropic", () => connectionFor(anthropic!, { OPENAI_API_KEY: "k", ANTHROPIC_BASE_URL: "http://proxy" }), "ANTHROPIC_API_KEY", "key"],
    ["azure key", () => connectionFor(azure!, { AZURE_OPENAI_ENDPOINT: "https://acme" }), "AZURE_OPENAI_API_KEY", "key"],
    ["azure endpoint", () => connectionFor(azure!, { AZURE_OPENAI_API_KEY: "z" }), "AZURE_OPENAI_ENDPOINT", "endpoint"],
    ["openai-compatible", () => connectionFor(compatible!, { OPENAI_API_KEY: "k" }), "OPENAI_BASE_URL", "endpoint"],
  ])("%s without its variable -> LLM_NOT_CONFIGURED naming it", (_name, connect, variable, what) => {
    const error = thrown(connect);
    expect(error.code).toBe(Code.FailedPrecondition);
    expect(error.reason).toBe("LLM_NOT_CONFIGURED");
    expect(error.metadata["variable"]).toBe(variable);
    expect(error.message).toContain(`no LLM ${what} is configured`);
    expect(error.message).toContain(variable);
    expect(error.message).not.toMatch(/[/:,?#&=+$@;]/);
  });

  it("an empty variable counts as unset", () => {
    expect(thrown(() => connectionFor(openai!, { OPENAI_API_KEY: "  " })).metadata["variable"]).toBe("OPENAI_API_KEY");
  });
});

describe("creating a client without the key it needs", () => {
  let server: ScriptedLlm;
  beforeAll(async () => {
    server = await ScriptedLlm.start("anthropic");
  });
  afterAll(() => server.close());

  it("throws FAILED_PRECONDITION at creation, before any HTTP request", () => {
    const error = thrown(() => createLlmClient({ model_name: "claude-3-5-haiku-latest" }, { ANTHROPIC_BASE_URL: server.baseUrl }));
    expect(error.reason).toBe("LLM_NOT_CONFIGURED");
    expect(error.metadata).toEqual({ variable: "ANTHROPIC_API_KEY", model: "claude-3-5-haiku-latest", provider: "anthropic" });
    expect(server.requests).toHaveLength(0);
  });

  it("a chain none of whose models can be called is refused with the first one's reason", () => {
    const error = thrown(() =>
      createLlmClient({ fallbacks: [{ model_name: "claude-sonnet-4-5" }, { model_name: "gemini-2.5-flash" }] }, { OPENAI_API_KEY: "sk-present" }),
    );
    expect(error.reason).toBe("LLM_NOT_CONFIGURED");
    expect(error.metadata["variable"]).toBe("ANTHROPIC_API_KEY");
    expect(JSON.stringify([error.message, error.metadata])).not.toContain("sk-present");
  });

  it("reads process.env by default", () => {
    const saved = process.env["OPENAI_API_KEY"];
    const savedUrl = process.env["OPENAI_BASE_URL"];
    delete process.env["OPENAI_API_KEY"];
    delete process.env["OPENAI_BASE_URL"];
    try {
      expect(thrown(() => createLlmClient({ model_name: "gpt-4o" })).metadata["variable"]).toBe("OPENAI_API_KEY");
    } finally {
      if (saved !== undefined) process.env["OPENAI_API_KEY"] = saved;
      if (savedUrl !== undefined) process.env["OPENAI_BASE_URL"] = savedUrl;
    }
  });
});
