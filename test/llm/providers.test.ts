import { Writable } from "node:stream";
import type { JsonObject } from "@bufbuild/protobuf";
import { pino } from "pino";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { AxonError, Code } from "../../src/errors.js";
import type { LlmMessage, LlmTool } from "../../src/llm/llm.js";
import { createLlmClient } from "../../src/llm/providers.js";
import { SCRIPTED_API_KEY, SCRIPTED_AWS_ACCESS_KEY_ID, ScriptedLlm, type ScriptedKind } from "../support/scripted-llm/scripted-llm.js";

const MODELS: Record<ScriptedKind, string> = {
  openai: "gpt-4o-mini",
  anthropic: "claude-3-5-haiku-latest",
  bedrock: "us.anthropic.claude-3-7-sonnet-20250219-v1:0",
};

/** List prices per million tokens [input, output]; Axon's table has none for Bedrock's ids. */
const PRICES: Record<ScriptedKind, [number, number]> = { openai: [0.15, 0.6], anthropic: [0.8, 4], bedrock: [0, 0] };

const calculator: LlmTool = {
  name: "calculator",
  description: "Does arithmetic",
  parameters: {
    type: "object",
    properties: { operation: { type: "string", enum: ["add", "multiply"] }, a: { type: "number" }, b: { type: "number" } },
    required: ["operation", "a", "b"],
  },
};

const question: LlmMessage[] = [
  { role: "system", content: "You are a careful calculator." },
  { role: "user", content: "what is 3 plus 4" },
];

function live(): AbortSignal {
  return new AbortController().signal;
}

/** Everything an error exposes: message, reason, metadata, and whatever it chains to. */
function exposed(error: unknown): string {
  const axon = error as AxonError;
  return JSON.stringify([String(error), axon.message, axon.reason, axon.metadata, String(axon.cause ?? "")]);
}

async function failure(promise: Promise<unknown>): Promise<AxonError> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(AxonError);
  return error as AxonError;
}

describe.each(["openai", "anthropic", "bedrock"] as const)("the %s provider against its scripted server", (kind) => {
  let server: ScriptedLlm;
  let backup: ScriptedLlm;
  const model = MODELS[kind];

  beforeAll(async () => {
    [server, backup] = await Promise.all([ScriptedLlm.start(kind), ScriptedLlm.start(kind)]);
  });
  afterAll(async () => {
    await Promise.all([server.close(), backup.close()]);
  });
  beforeEach(() => {
    server.reset();
    backup.reset();
  });

  const client = (config: JsonObject = {}) => createLlmClient({ model_name: model, ...config }, server.env);
  /** The backup server as a fallback: same protocol, another model name, its own base URL. */
  const backupFallback = () => ({ model_name: `${model}-backup`, base_url: backup.baseUrl });

  describe.each([false, true])("streaming %s", (streaming) => {
    it("answers with text and maps the usage with its cost", async () => {
      server.enqueue({ text: "Seven, surely.", usage: { promptTokens: 1000, completionTokens: 500 } });
      const response = await client({ streaming }).complete({ messages: question, tools: [], signal: live() });
      expect(response.text).toBe("Seven, surely.");
      expect(response.toolCalls).toEqual([]);
      expect(response.model).toBe(model);
      const perMillion = PRICES[kind];
      expect(response.usage).toEqual({
        promptTokens: 1000,
        completionTokens: 500,
        totalTokens: 1500,
        cost: expect.closeTo((1000 * perMillion[0]! + 500 * perMillion[1]!) / 1e6, 12) as number,
      });
      expect(server.requests[0]?.request.stream).toBe(streaming);
    });

    it("names the model that answered as the provider's answer names it (Bedrock's answer names none)", async () => {
      server.enqueue({ text: "Seven.", model: `${model}-2024-07-18` });
      const response = await client({ streaming }).complete({ messages: question, tools: [], signal: live() });
      expect(response.model).toBe(kind === "bedrock" ? model : `${model}-2024-07-18`);
    });

    it("makes a tool call, sends the tool result back and gets the answer", async () => {
      const llm = client({ streaming });
      const first = await llm.complete({ messages: question, tools: [calculator], signal: live() });
      expect(first.toolCalls).toEqual([
        { id: expect.any(String) as string, name: "calculator", arguments: { operation: "add", a: 3, b: 4 } },
      ]);
      const call = first.toolCalls[0]!;
      const second = await llm.complete({
        messages: [...question, { role: "assistant", content: first.text, toolCalls: [call] }, { role: "tool", toolCallId: call.id, content: "7" }],
        tools: [calculator],
        signal: live(),
      });
      expect(second.text).toBe("Answer: 7");
      const seen = server.requests[1]!.request;
      expect(seen.system).toBe("You are a careful calculator.");
      expect(seen.tools.map((tool) => tool.name)).toEqual(["calculator"]);
      expect(seen.messages).toEqual([
        { role: "user", content: "what is 3 plus 4" },
        { role: "assistant", content: "", toolCalls: [call] },
        { role: "tool", toolCallId: call.id, content: "7" },
      ]);
    });

    it("gives malformed tool arguments as {} with the reason", async () => {
      server.enqueue({ toolCalls: [{ name: "calculator", arguments: '{"a": 3, "b":' }] });
      const response = await client({ streaming }).complete({ messages: question, tools: [calculator], signal: live() });
      expect(response.toolCalls[0]).toMatchObject({ name: "calculator", arguments: {}, argumentsError: expect.any(String) as string });
    });
  });

  it("sends temperature and max tokens only when configured", async () => {
    await client({ temperature: 0.2, max_tokens: 300 }).complete({ messages: question, tools: [], signal: live() });
    await client().complete({ messages: question, tools: [], signal: live() });
    const [configured, plain] = server.requests.map((request) => request.body);
    if (kind === "bedrock") {
      expect(configured?.["inferenceConfig"]).toEqual({ temperature: 0.2, maxTokens: 300 });
      expect(plain?.["inferenceConfig"]).toEqual({});
      return;
    }
    expect(configured?.["temperature"]).toBe(0.2);
    expect(plain?.["temperature"]).toBeUndefined();
    if (kind === "openai") {
      expect(configured?.["max_completion_tokens"]).toBe(300);
      expect(plain?.["max_completion_tokens"]).toBeUndefined();
    } else {
      expect(configured?.["max_tokens"]).toBe(300);
      expect(plain?.["max_tokens"]).toBe(4096); // required by the Messages API
    }
  });

  it("sends the key from the environment", async () => {
    await client().complete({ messages: question, tools: [], signal: live() });
    // Bedrock signs with the secret and sends only the access key id.
    expect(server.requests[0]?.credential).toBe(kind === "bedrock" ? SCRIPTED_AWS_ACCESS_KEY_ID : SCRIPTED_API_KEY);
    expect(JSON.stringify(server.requests[0]?.body)).not.toContain(SCRIPTED_API_KEY);
  });

  it("retries a 500 and a 429, then succeeds", async () => {
    server.failNext(500);
    server.failNext(429);
    const response = await client().complete({ messages: question, tools: [], signal: live() });
    expect(response.text).toBe("Answer: what is 3 plus 4");
    expect(server.requests.map((request) => request.status)).toEqual([500, 429, 200]);
  });

  it("uses the fallback once the primary failed 1 + 3 times", async () => {
    server.failNext(503, 4);
    const response = await client({ fallbacks: [backupFallback()] }).complete({ messages: question, tools: [], signal: live() });
    expect(server.requests.map((request) => request.status)).toEqual([503, 503, 503, 503]);
    expect(backup.requests).toHaveLength(1);
    expect(response.model).toBe(`${model}-backup`);
    expect(response.text).toBe("Answer: what is 3 plus 4");
  });

  it("does not retry a 400 but still tries the fallback", async () => {
    server.failNext(400);
    const response = await client({ fallbacks: [backupFallback()] }).complete({ messages: question, tools: [], signal: live() });
    expect(server.requests).toHaveLength(1);
    expect(backup.requests).toHaveLength(1);
    expect(response.model).toBe(`${model}-backup`);
  });

  it("fails with LLM_UNAVAILABLE when every model failed, quoting no key and no provider text", async () => {
    const lines: string[] = [];
    const logger = pino(new Writable({ write: (chunk: Buffer, _encoding, done) => (lines.push(chunk.toString()), done()) }));
    server.failNext(401);
    backup.failNext(500, 4);
    const llm = createLlmClient({ model_name: model, fallbacks: [backupFallback()] }, server.env, { logger });
    const error = await failure(llm.complete({ messages: question, tools: [], signal: live() }));
    expect(error.code).toBe(Code.Unavailable);
    expect(error.reason).toBe("LLM_UNAVAILABLE");
    expect(error.metadata).toMatchObject({ model: `${model}-backup`, provider: kind, status: "500", models_tried: "2" });
    expect(server.requests[0]?.status).toBe(401); // the scripted 401 quotes the key, as the real APIs do
    expect(exposed(error)).not.toContain(SCRIPTED_API_KEY);
    expect(exposed(error)).not.toContain("scripted failure");
    expect(lines.join("")).toContain("LLM call failed");
    expect(lines.join("")).not.toContain(SCRIPTED_API_KEY);
  });

  it.each([false, true])("aborting the signal aborts the HTTP request in flight (streaming %s)", async (streaming) => {
    server.hold();
    const controller = new AbortController();
    const call = client({ streaming }).complete({ messages: question, tools: [], signal: controller.signal });
    await server.whenReceived(1);
    const reason = new Error("the client went away");
    controller.abort(reason);
    await expect(call).rejects.toBe(reason);
    const aborted = await server.whenAborted();
    expect(aborted).toBe(server.requests[0]);
  });

  it("an attempt slower than timeout_seconds is abandoned and retried", async () => {
    server.hold();
    const response = await client({ timeout_seconds: 0.2 }).complete({ messages: question, tools: [], signal: live() });
    expect(response.text).toBe("Answer: what is 3 plus 4");
    expect(server.requests.map((request) => [request.aborted, request.status])).toEqual([
      [true, 0],
      [false, 200],
    ]);
  });

  it("aborting while a retry waits stops at once, trying neither a retry nor a fallback", async () => {
    server.failNext(503, 1, { retryAfterMs: 30_000 });
    const controller = new AbortController();
    const call = client({ fallbacks: [backupFallback()] }).complete({ messages: question, tools: [], signal: controller.signal });
    await server.whenReceived(1);
    const started = Date.now();
    controller.abort();
    await expect(call).rejects.toMatchObject({ name: "AbortError" });
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(server.requests).toHaveLength(1);
    expect(backup.requests).toHaveLength(0);
  });
});

describe("providers sharing one conversation", () => {
  let openai: ScriptedLlm;
  let anthropic: ScriptedLlm;
  beforeAll(async () => {
    [openai, anthropic] = await Promise.all([ScriptedLlm.start("openai"), ScriptedLlm.start("anthropic")]);
  });
  afterAll(async () => {
    await Promise.all([openai.close(), anthropic.close()]);
  });

  it("falls back from OpenAI to Anthropic, each with its own key", async () => {
    openai.failNext(404);
    const env = { ...openai.env, ANTHROPIC_API_KEY: "sk-ant-other", ANTHROPIC_BASE_URL: anthropic.baseUrl };
    const llm = createLlmClient({ model_name: "gpt-4o", fallbacks: [{ model_name: "claude-sonnet-4-5" }] }, env);
    expect(llm.description).toBe("openai gpt-4o then anthropic claude-sonnet-4-5");
    const response = await llm.complete({ messages: question, tools: [calculator], signal: live() });
    // The model that answered, as Anthropic named it in its answer (the scripted server names the one it was sent).
    expect(response.model).toBe(anthropic.requests[0]?.body["model"]);
    expect(response.model).toMatch(/^claude-sonnet-4-5/);
    expect(response.toolCalls[0]?.arguments).toEqual({ operation: "add", a: 3, b: 4 });
    expect(anthropic.requests[0]?.credential).toBe("sk-ant-other");
  });

  it("reaches Azure OpenAI through its deployment path and api-key header", async () => {
    openai.reset();
    const env = { AZURE_OPENAI_API_KEY: "azure-secret", AZURE_OPENAI_ENDPOINT: openai.url };
    const llm = createLlmClient({ class: "azure-openai", model_name: "gpt-4o-mini", deployment_name: "prod-mini" }, env);
    expect((await llm.complete({ messages: question, tools: [], signal: live() })).text).toBe("Answer: what is 3 plus 4");
    expect(openai.requests[0]?.path).toBe("/openai/deployments/prod-mini/chat/completions?api-version=2024-10-21");
    expect(openai.requests[0]?.credential).toBe("azure-secret");
  });

  it("routes azure-* model names to Azure OpenAI, with deployment_name and the API version, never to OpenAI", async () => {
    openai.reset();
    anthropic.reset();
    const azure = await ScriptedLlm.start("openai");
    try {
      const env = { ...openai.env, AZURE_OPENAI_API_KEY: "azure-secret", AZURE_OPENAI_ENDPOINT: azure.url };
      const llm = createLlmClient({ model_name: "azure-gpt-4o", deployment_name: "team-4o", openai_api_version: "2024-06-01" }, env);
      // Azure answers with the deployment's model.
      expect((await llm.complete({ messages: question, tools: [], signal: live() })).model).toBe("gpt-4o");
      expect(azure.requests[0]?.path).toBe("/openai/deployments/team-4o/chat/completions?api-version=2024-06-01");
      expect(azure.requests[0]?.body["model"]).toBe("gpt-4o");
      expect(openai.requests).toHaveLength(0);
    } finally {
      await azure.close();
    }
  });

  it("routes gemini-* model names to Gemini's OpenAI-compatible endpoint with GOOGLE_API_KEY, never to OpenAI", async () => {
    openai.reset();
    const gemini = await ScriptedLlm.start("openai");
    try {
      const env = { ...openai.env, GOOGLE_API_KEY: "google-secret", GEMINI_BASE_URL: gemini.baseUrl };
      const response = await createLlmClient({ model_name: "gemini-2.5-flash" }, env).complete({ messages: question, tools: [calculator], signal: live() });
      expect(response.toolCalls[0]?.arguments).toEqual({ operation: "add", a: 3, b: 4 });
      expect(gemini.requests[0]).toMatchObject({ path: "/v1/chat/completions", credential: "google-secret" });
      expect(gemini.requests[0]?.body["model"]).toBe("gemini-2.5-flash");
      expect(openai.requests).toHaveLength(0);
    } finally {
      await gemini.close();
    }
  });

  it("refuses a model whose class Axon does not know, naming it, and sends nothing anywhere", () => {
    openai.reset();
    anthropic.reset();
    const env = { ...openai.env, ANTHROPIC_API_KEY: "a", ANTHROPIC_BASE_URL: anthropic.baseUrl, AWS_ACCESS_KEY_ID: "aws" };
    for (const model_name of ["vertex-gemini"]) {
      let error: unknown;
      try {
        createLlmClient({ model_name, class: "langchain_google_vertexai.ChatVertexAI" }, env);
      } catch (thrown) {
        error = thrown;
      }
      expect(error).toMatchObject({ code: Code.FailedPrecondition, reason: "LLM_PROVIDER_UNSUPPORTED", metadata: expect.objectContaining({ model: model_name }) });
    }
    expect(openai.requests).toHaveLength(0);
    expect(anthropic.requests).toHaveLength(0);
  });

  it("a fallback chain runs on the first model that can be called, warning about each one skipped", async () => {
    openai.reset();
    const lines: string[] = [];
    const logger = pino(new Writable({ write: (chunk: Buffer, _encoding, done) => (lines.push(chunk.toString()), done()) }));
    const chain = { fallbacks: [{ model_name: "claude-sonnet-4-5" }, { model_name: "gemini-2.5-flash" }, { model_name: "nvidia-llama-3.3-70b-instruct" }, { model_name: "gpt-4o-mini" }] };
    const llm = createLlmClient(chain, openai.env, { logger });
    expect(llm.description).toBe("openai gpt-4o-mini");
    expect((await llm.complete({ messages: question, tools: [], signal: live() })).model).toBe("gpt-4o-mini");
    const skipped = lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line["msg"] === "LLM fallback skipped: it cannot be called");
    expect(skipped.map((line) => [line["model"], line["reason"], line["variable"] ?? null])).toEqual([
      ["claude-sonnet-4-5", "LLM_NOT_CONFIGURED", "ANTHROPIC_API_KEY"],
      ["gemini-2.5-flash", "LLM_NOT_CONFIGURED", "GOOGLE_API_KEY"],
      ["nvidia-llama-3.3-70b-instruct", "LLM_NOT_CONFIGURED", "NVIDIA_API_KEY"],
    ]);
    expect(lines.join("")).not.toContain(SCRIPTED_API_KEY);
  });

  it("reaches Ollama at OLLAMA_HOST/v1 without a key", async () => {
    openai.reset();
    const llm = createLlmClient({ model_name: "llama3.1:8b" }, { OLLAMA_HOST: openai.url });
    expect(llm.description).toBe("ollama llama3.1:8b");
    await llm.complete({ messages: question, tools: [], signal: live() });
    expect(openai.requests[0]?.path).toBe("/v1/chat/completions");
    expect(openai.requests[0]?.body["model"]).toBe("llama3.1:8b");
  });

  it("reaches a keyless OpenAI-compatible server named by OPENAI_BASE_URL alone", async () => {
    openai.reset();
    const llm = createLlmClient({ model_name: "my-local-model" }, { OPENAI_BASE_URL: openai.baseUrl });
    expect((await llm.complete({ messages: question, tools: [], signal: live() })).text).toBe("Answer: what is 3 plus 4");
    expect(openai.requests).toHaveLength(1);
  });
});
