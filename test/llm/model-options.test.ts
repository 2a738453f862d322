import type { JsonObject } from "@bufbuild/protobuf";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { AxonError, Code } from "../../src/errors.js";
import { resolveLlmChain } from "../../src/llm/config.js";
import type { LlmMessage } from "../../src/llm/llm.js";
import { createLlmClient } from "../../src/llm/providers.js";
import { ScriptedLlm } from "../support/scripted-llm/scripted-llm.js";

const question: LlmMessage[] = [{ role: "user", content: "think hard" }];

function refusal(config: JsonObject): AxonError {
  try {
    resolveLlmChain(config);
  } catch (error) {
    expect(error).toBeInstanceOf(AxonError);
    return error as AxonError;
  }
  throw new Error("expected the config to be refused");
}

/** Each documented llm_config key, as the provider's own request body must carry it. */
describe("model options reach the provider's request", () => {
  let openai: ScriptedLlm;
  let anthropic: ScriptedLlm;
  beforeAll(async () => {
    [openai, anthropic] = await Promise.all([ScriptedLlm.start("openai"), ScriptedLlm.start("anthropic")]);
  });
  afterAll(async () => {
    await Promise.all([openai.close(), anthropic.close()]);
  });
  beforeEach(() => {
    openai.reset();
    anthropic.reset();
  });

  const sent = async (server: ScriptedLlm, config: JsonObject, env: Record<string, string>, streaming = false): Promise<JsonObject> => {
    await createLlmClient({ ...config, streaming }, env).complete({ messages: question, tools: [], signal: new AbortController().signal });
    return server.requests.at(-1)!.body;
  };

  it.each([false, true])("OpenAI reasoning models: reasoning_effort, verbosity and the sampling keys (streaming %s)", async (streaming) => {
    const body = await sent(
      openai,
      {
        model_name: "gpt-5-mini",
        reasoning_effort: "high",
        verbosity: "low",
        top_p: 0.9,
        presence_penalty: 0.1,
        frequency_penalty: 0.2,
        seed: 42,
        stop: ["END"],
        logit_bias: { "50256": -100 },
        logprobs: true,
        top_logprobs: 2,
        max_retries: 0,
        request_timeout: 30,
        n: 1,
      },
      openai.env,
      streaming,
    );
    expect(body).toMatchObject({
      model: "gpt-5-mini",
      reasoning_effort: "high",
      verbosity: "low",
      top_p: 0.9,
      presence_penalty: 0.1,
      frequency_penalty: 0.2,
      seed: 42,
      stop: ["END"],
      logit_bias: { "50256": -100 },
      logprobs: true,
      top_logprobs: 2,
    });
    expect(body).not.toHaveProperty("n");
  });

  it("OpenAI: LangChain's reasoning dict sends its effort", async () => {
    expect(await sent(openai, { model_name: "o3-mini", reasoning: { effort: "medium" } }, openai.env)).toMatchObject({ reasoning_effort: "medium" });
  });

  it.each([false, true])("Anthropic: thinking, top_k, top_p and stop_sequences (streaming %s)", async (streaming) => {
    const thinking = { type: "enabled", budget_tokens: 2048 };
    const body = await sent(
      anthropic,
      { model_name: "claude-sonnet-4-5", thinking, top_k: 5, top_p: 0.8, stop_sequences: "STOP", max_tokens: 4000, default_request_timeout: 20 },
      anthropic.env,
      streaming,
    );
    expect(body).toMatchObject({ model: "claude-sonnet-4-5-20250929", thinking, top_k: 5, top_p: 0.8, stop_sequences: ["STOP"], max_tokens: 4000 });
  });

  it("Gemini: thinking_level as the reasoning_effort of Google's OpenAI-compatible API", async () => {
    const env = { GOOGLE_API_KEY: "g", GEMINI_BASE_URL: openai.baseUrl };
    expect(await sent(openai, { model_name: "gemini-3-flash", thinking_level: "low", top_p: 0.5, n: 1 }, env)).toMatchObject({
      model: "gemini-3-flash-preview",
      reasoning_effort: "low",
      top_p: 0.5,
    });
  });

  it.each([
    [false, "none"],
    [true, "medium"],
    ["high", "high"],
  ])("Ollama: reasoning %j as reasoning_effort %s, num_predict as max_tokens", async (reasoning, effort) => {
    const body = await sent(openai, { model_name: "qwen3:8b", reasoning, num_predict: 256, seed: 1, stop: "###" }, { OLLAMA_HOST: openai.url });
    expect(body).toMatchObject({ model: "qwen3:8b", reasoning_effort: effort, max_tokens: 256, seed: 1, stop: "###" });
  });

  it("NVIDIA at NVIDIA_BASE_URL with NVIDIA_API_KEY: the table's model id and the sampling keys", async () => {
    const body = await sent(openai, { model_name: "nvidia-llama-3.3-70b-instruct", top_p: 0.7, seed: 3, stop: ["x"] }, { NVIDIA_API_KEY: "nv-key", NVIDIA_BASE_URL: openai.baseUrl });
    expect(body).toMatchObject({ model: "meta/llama-3.3-70b-instruct", top_p: 0.7, seed: 3, stop: ["x"] });
    expect(openai.requests.at(-1)?.credential).toBe("nv-key");
  });

  it("OpenRouter at OPENROUTER_API_BASE with OPENROUTER_API_KEY: its reasoning object and provider routing", async () => {
    const body = await sent(
      openai,
      { class: "openrouter", model_name: "anthropic/claude-sonnet-4.5", reasoning: { effort: "high", exclude: true }, openrouter_provider: { order: ["anthropic"] }, route: "fallback" },
      { OPENROUTER_API_KEY: "or-key", OPENROUTER_API_BASE: openai.baseUrl },
    );
    expect(body).toMatchObject({ model: "anthropic/claude-sonnet-4.5", reasoning: { effort: "high", exclude: true }, provider: { order: ["anthropic"] }, route: "fallback" });
    expect(openai.requests.at(-1)?.credential).toBe("or-key");
  });

  it.each([false, true])("Bedrock Converse: top_p and stop_sequences in inferenceConfig, model_kwargs and guardrails (streaming %s)", async (streaming) => {
    const bedrock = await ScriptedLlm.start("bedrock");
    try {
      const thinking = { type: "enabled", budget_tokens: 1024 };
      const body = await sent(
        bedrock,
        {
          model_name: "bedrock-us-claude-sonnet-4",
          max_tokens: 2000,
          top_p: 0.9,
          stop_sequences: ["END"],
          model_kwargs: { thinking },
          guardrails: { guardrailIdentifier: "gr-1", guardrailVersion: "2", trace: null },
          beta_use_converse_api: true,
        },
        bedrock.env,
        streaming,
      );
      expect(body).toMatchObject({
        inferenceConfig: { maxTokens: 2000, topP: 0.9, stopSequences: ["END"] },
        additionalModelRequestFields: { thinking },
        guardrailConfig: { guardrailIdentifier: "gr-1", guardrailVersion: "2" },
      });
      expect(bedrock.requests[0]?.request).toMatchObject({ model: "us.anthropic.claude-sonnet-4-20250514-v1:0", stream: streaming });
    } finally {
      await bedrock.close();
    }
  });

  it("Bedrock: AWS keys from the client sign the request; the region and endpoint come from the config", async () => {
    const bedrock = await ScriptedLlm.start("bedrock");
    try {
      const config = { model_name: "bedrock-us-claude-3-7-sonnet", aws_access_key_id: "sly_data", aws_secret_access_key: "sly_data", region_name: "eu-west-1", endpoint_url: bedrock.url };
      const clientKeys = { aws_access_key_id: "AKIACLIENTOWN0000001", aws_secret_access_key: "client-secret-never-sent" };
      await createLlmClient(config, { AWS_ACCESS_KEY_ID: "AKIASERVER", AWS_SECRET_ACCESS_KEY: "server" }, { clientKeys }).complete({ messages: question, tools: [], signal: new AbortController().signal });
      const [request] = bedrock.requests;
      expect(request?.credential).toBe("AKIACLIENTOWN0000001");
      expect(JSON.stringify(request)).not.toContain("client-secret-never-sent");
    } finally {
      await bedrock.close();
    }
  });

  it("Azure OpenAI: the OpenAI keys plus openai_api_type azure", async () => {
    const env = { AZURE_OPENAI_API_KEY: "z", AZURE_OPENAI_ENDPOINT: openai.url };
    const body = await sent(openai, { model_name: "azure-o3-mini", reasoning_effort: "low", openai_api_type: "azure", deployment_name: "o3" }, env);
    expect(body).toMatchObject({ reasoning_effort: "low" });
  });
});

describe("model options a provider cannot take are refused, naming the key", () => {
  it.each([
    [{ model_name: "claude-sonnet-4-5", reasoning_effort: "high" }, "llm_config.reasoning_effort"],
    [{ model_name: "gpt-4o", thinking: { type: "enabled", budget_tokens: 1000 } }, "llm_config.thinking"],
    [{ model_name: "gemini-2.5-flash", thinking_budget: 100 }, "llm_config.thinking_budget"],
    [{ model_name: "llama3.1", num_ctx: 8192 }, "llm_config.num_ctx"],
    [{ model_name: "gpt-4o", openai_proxy: "http://proxy" }, "llm_config.openai_proxy"],
    [{ model_name: "gpt-4o", prompt_token_fraction: 0.5 }, "llm_config.prompt_token_fraction"],
    [{ model_name: "gpt-4o", mystery_knob: 1 }, "llm_config.mystery_knob"],
    [{ model_name: "bedrock-us-claude-sonnet-4", credentials_profile_name: "dev" }, "llm_config.credentials_profile_name"],
    [{ model_name: "gpt-4o", fallbacks: [{ model_name: "claude-haiku-4-5", verbosity: "low" }] }, "fallbacks[0].verbosity"],
  ])("%j -> %s", (config, key) => {
    const error = refusal(config);
    expect(error).toMatchObject({ code: Code.FailedPrecondition, reason: "LLM_CONFIG_INVALID" });
    expect(error.metadata["key"]).toBe(key);
  });

  it.each([
    [{ model_name: "gpt-4o", reasoning_effort: 3 }, "llm_config.reasoning_effort", "a non-empty string"],
    [{ model_name: "gpt-4o", reasoning: { effort: "high", summary: "auto" } }, "llm_config.reasoning", "an object with only effort (chat completions have no reasoning summary)"],
    [{ model_name: "gpt-4o", n: 3 }, "llm_config.n", "one of 1"],
    [{ model_name: "claude-sonnet-4-5", thinking: "yes" }, "llm_config.thinking", "an object"],
    [{ model_name: "gpt-4o", max_retries: -1 }, "llm_config.max_retries", "an integer of 0 or more"],
  ])("%j has the wrong shape -> %s must be %s", (config, key, expected) => {
    expect(refusal(config).metadata).toMatchObject({ key, expected });
  });

  it("a null option is neuro-san's unset and is not sent", () => {
    expect(resolveLlmChain({ model_name: "gpt-4o", top_p: null, seed: null })[0]?.requestFields).toEqual({});
  });
});

describe("keys the client supplies (neuro-san's sly_data.llm_config)", () => {
  it("a provider's own key may be written as sly_data, in any case", () => {
    expect(resolveLlmChain({ model_name: "gpt-4o", openai_api_key: "sly_data" })[0]?.clientKeys).toEqual(["openai_api_key"]);
    expect(resolveLlmChain({ model_name: "claude-sonnet-4-5", anthropic_api_key: "SLY_DATA" })[0]?.clientKeys).toEqual(["anthropic_api_key"]);
  });

  it.each([
    [{ model_name: "gpt-4o", anthropic_api_key: "sly_data" }, "llm_config.anthropic_api_key"],
    [{ model_name: "gpt-4o", temperature: "sly_data" }, "llm_config.temperature"],
  ])("%j is refused: only the model's provider's keys come from the client", (config, key) => {
    const error = refusal(config);
    expect(error.reason).toBe("LLM_CONFIG_INVALID");
    expect(error.metadata["key"]).toBe(key);
  });

  it("a missing client key is INVALID_ARGUMENT naming it; the environment's key is never used instead", () => {
    let error: unknown;
    try {
      createLlmClient({ model_name: "gpt-4o", openai_api_key: "sly_data" }, { OPENAI_API_KEY: "sk-server" }, { clientKeys: { anthropic_api_key: "x" } });
    } catch (thrown) {
      error = thrown;
    }
    expect(error).toMatchObject({ code: Code.InvalidArgument, reason: "LLM_CLIENT_KEY_MISSING", metadata: { key: "sly_data.llm_config.openai_api_key", model: "gpt-4o", provider: "openai" } });
    expect(JSON.stringify(error)).not.toContain("sk-server");
  });
});
