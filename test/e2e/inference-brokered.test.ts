import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAxonProcess, type AxonProcess } from "../support/axon-process.js";
import { filesUnder, inferenceFiles, inferenceManifest, newUpstreamKey, openAiClient, type Answers } from "../support/inference.js";
import { secret } from "../support/operations.js";
import { ScriptedLlm } from "../support/scripted-llm/scripted-llm.js";
import { thrown } from "../support/thrown.js";


const key = newUpstreamKey();
const [alice, bob, carol, dave, operator] = [secret(), secret(), secret(), secret(), secret()];
// Limits no test reaches unless it means to; bob, carol and dave each have one that a test reaches.
const admission = {
  requests_per_window: 10_000,
  inference_requests_per_window: 10_000,
  clients: {
    bob: { inference_in_flight: 1 },
    carol: { inference_tokens_per_day: 1 },
    dave: { inference_requests_per_window: 1, window_seconds: 3600 },
  },
};
const model = "Qwen/Qwen2.5-7B-Instruct";

describe("brokered models on /v1, through the official openai SDK", () => {
  let upstream: ScriptedLlm;
  let axon: AxonProcess;
  let dataDir: string;
  const answers: Answers = { bodies: [] };
  const sdk = (apiKey: string, options: { maxRetries?: number } = {}) => openAiClient(axon.url, apiKey, answers, options);

  beforeAll(async () => {
    upstream = await ScriptedLlm.start("openai");
    upstream.models = [model, "meta-llama/Llama-3.1-8B-Instruct", "mistralai/Unrouted-7B"];
    dataDir = mkdtempSync(path.join(os.tmpdir(), "axon-inference-data-"));
    const files = inferenceFiles({
      clients: { alice, bob, carol, dave },
      operator,
      admission,
      upstreams: {
        hf: { base_url: upstream.baseUrl, secret_env: "HF_TOKEN", models: ["Qwen/*", "meta-llama/*"] },
        // Nothing listens on port 9; NO_SUCH_KEY is not set.
        dead: { base_url: "http://127.0.0.1:9/v1", secret_env: "HF_TOKEN", models: ["dead/*"], models_path: null },
        keyless: { base_url: upstream.baseUrl, secret_env: "NO_SUCH_KEY", models: ["keyless/model"], models_path: null },
      },
    });
    axon = await startAxonProcess({ ...files, HF_TOKEN: key, AGENT_MANIFEST_FILE: inferenceManifest, AXON_DATA_DIR: dataDir, LOG_LEVEL: "debug" });
  });
  afterAll(async () => {
    await axon?.stop();
    await upstream?.close();
  });

  it("lists the networks, then the upstream's models its globs route to it, asking the upstream with its key once in a while", async () => {
    const listed = (await sdk(alice).models.list()).data.map((entry) => entry.id);
    expect(listed).toEqual(["axon/echo", "axon/helpdesk", model, "meta-llama/Llama-3.1-8B-Instruct", "keyless/model"]);
    expect((await sdk(bob).models.list()).data.map((entry) => entry.id)).toEqual(listed);
    expect(upstream.modelListings).toEqual([{ path: "/v1/models", credential: key }]);
    expect(await sdk(alice).models.retrieve(model)).toMatchObject({ id: model, object: "model", owned_by: "scripted" });
    const missing = await thrown(() => sdk(alice).models.retrieve("mistralai/Unrouted-7B"));
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
  });

  it("sends a completion with the upstream's key in place of the client's, exactly the fields it was given, and answers as the upstream did", async () => {
    upstream.enqueue({ text: "Hello there", usage: { promptTokens: 7, completionTokens: 3 } });
    const completion = await sdk(alice).chat.completions.create({ model, messages: [{ role: "user", content: "hi" }], temperature: 0.2, max_tokens: 50 });
    expect(completion.choices[0]!.message).toMatchObject({ role: "assistant", content: "Hello there" });
    expect(completion.usage).toEqual({ prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 });
    const reached = upstream.requests.at(-1)!;
    expect(reached.path).toBe("/v1/chat/completions");
    expect(reached.credential).toBe(key);
    expect(reached.body).toEqual({ model, messages: [{ role: "user", content: "hi" }], temperature: 0.2, max_tokens: 50 });
  });

  it("streams the upstream's chunks as they come, the usage chunk it was asked for, then [DONE]", async () => {
    upstream.enqueue({ text: "one two three", usage: { promptTokens: 5, completionTokens: 4 } });
    const stream = await sdk(alice).chat.completions.create({ model, messages: [{ role: "user", content: "count" }], stream: true, stream_options: { include_usage: true } });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? "").join("")).toBe("one two three");
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: 5, completion_tokens: 4, total_tokens: 9 } });
    expect(upstream.requests.at(-1)!.body.stream_options).toEqual({ include_usage: true });
  });

  it("streams tool calls as their deltas, and answers them whole when not streamed", async () => {
    const tools = [{ type: "function" as const, function: { name: "lookup", parameters: { type: "object", properties: { q: { type: "string" } } } } }];
    upstream.enqueue({ toolCalls: [{ name: "lookup", arguments: { q: "axon" } }] });
    const whole = await sdk(alice).chat.completions.create({ model, messages: [{ role: "user", content: "find axon" }], tools });
    expect(whole.choices[0]!.finish_reason).toBe("tool_calls");
    expect(whole.choices[0]!.message.tool_calls![0]).toMatchObject({ type: "function", function: { name: "lookup", arguments: '{"q":"axon"}' } });

    upstream.enqueue({ toolCalls: [{ name: "lookup", arguments: { q: "axon" } }] });
    const stream = await sdk(alice).chat.completions.create({ model, messages: [{ role: "user", content: "find axon" }], tools, stream: true });
    const deltas = [];
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      deltas.push(...(chunk.choices[0]?.delta.tool_calls ?? []));
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas[0]).toMatchObject({ index: 0, type: "function", function: { name: "lookup" } });
    expect(deltas.map((delta) => delta.function?.arguments ?? "").join("")).toBe('{"q":"axon"}');
    expect(finish).toBe("tool_calls");
  });

  it("counts a stream's tokens even when the client asked for no usage: Axon asks the upstream and keeps the usage chunk to itself", async () => {
    upstream.enqueue({ text: "quiet", usage: { promptTokens: 11, completionTokens: 13 } });
    const stream = await sdk(bob).chat.completions.create({ model: "meta-llama/Llama-3.1-8B-Instruct", messages: [{ role: "user", content: "hush" }], stream: true });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.every((chunk) => chunk.choices.length === 1)).toBe(true);
    expect(upstream.requests.at(-1)!.body.stream_options).toEqual({ include_usage: true });
    const metrics = await (await fetch(`${axon.url}/metrics`)).text();
    expect(metrics).toContain('axon_inference_tokens_total{client="bob",model="meta-llama/Llama-3.1-8B-Instruct",type="input"} 11');
    expect(metrics).toContain('axon_inference_tokens_total{client="bob",model="meta-llama/Llama-3.1-8B-Instruct",type="output"} 13');
    expect(metrics).toContain('axon_inference_requests_total{client="bob",model="meta-llama/Llama-3.1-8B-Instruct",status="200"} 1');
  });

  it("refuses a field OpenAI does not document, naming it, and forwards nothing", async () => {
    const before = upstream.requests.length;
    const refused = await thrown(() => sdk(alice).chat.completions.create({ model, messages: [{ role: "user", content: "hi" }], sly_data: { x: 1 } } as never));
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect(refused).toMatchObject({ status: 400, param: "sly_data", code: "unknown_parameter", type: "invalid_request_error" });
    const noMessages = await thrown(() => sdk(alice).chat.completions.create({ model, messages: [] }));
    expect(noMessages).toMatchObject({ status: 400, param: "messages" });
    expect(upstream.requests.length).toBe(before);
  });

  it("answers a model no upstream serves, and a network that is not there, with 404 model_not_found", async () => {
    for (const name of ["mistralai/Unrouted-7B", "axon/hidden", "axon/nowhere"]) {
      const refused = await thrown(() => sdk(alice).chat.completions.create({ model: name, messages: [{ role: "user", content: "hi" }] }));
      expect(refused, name).toBeInstanceOf(OpenAI.NotFoundError);
      expect(refused).toMatchObject({ code: "model_not_found", param: "model" });
    }
  });

  it("takes only a client's secret as the API key: an unknown one and an operator's are 401", async () => {
    for (const apiKey of [secret(), operator]) {
      const refused = await thrown(() => sdk(apiKey).chat.completions.create({ model, messages: [{ role: "user", content: "hi" }] }));
      expect(refused).toBeInstanceOf(OpenAI.AuthenticationError);
      expect(refused).toMatchObject({ status: 401, code: "unauthenticated" });
    }
  });

  it("passes an upstream's 429 on with its retry advice, so the SDK retries, and the retry goes through", async () => {
    const before = upstream.requests.length;
    upstream.failNext(429, 1, { retryAfterMs: 5 });
    const completion = await sdk(alice, { maxRetries: 2 }).chat.completions.create({ model, messages: [{ role: "user", content: "again" }] });
    expect(completion.choices[0]!.message.content).toBe("Answer: again");
    expect(upstream.requests.slice(before).map((request) => request.status)).toEqual([429, 200]);
  });

  it("answers an upstream that refuses Axon's key with a 502 that names no key, not with the client's 401", async () => {
    upstream.failNext(401);
    const refused = await thrown(() => sdk(alice).chat.completions.create({ model, messages: [{ role: "user", content: "hi" }] }));
    expect(refused).toBeInstanceOf(OpenAI.InternalServerError);
    expect(refused).toMatchObject({ status: 502, code: "upstream_failed" });
    expect((refused as Error).message).not.toContain(key);
  });

  it("passes an upstream's own refusal on with its status, type and code, and answers an upstream out of reach or without its key as Axon's failure", async () => {
    upstream.failNext(400);
    const refused = await thrown(() => sdk(alice).chat.completions.create({ model, messages: [{ role: "user", content: "hi" }] }));
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect(refused).toMatchObject({ status: 400, type: "invalid_request_error", code: "invalid_request_error" });
    expect((refused as Error).message).toContain("scripted failure 400");

    const unreachable = await thrown(() => sdk(alice).chat.completions.create({ model: "dead/model", messages: [{ role: "user", content: "hi" }] }));
    expect(unreachable).toMatchObject({ status: 502, code: "upstream_failed", message: "502 the upstream could not be reached" });
    const keyless = await thrown(() => sdk(alice).chat.completions.create({ model: "keyless/model", messages: [{ role: "user", content: "hi" }] }));
    expect(keyless).toMatchObject({ status: 503, code: "upstream_key_missing" });
  });

  it("refuses calls past the client's calls in flight with 429, and a client that leaves ends the upstream's call", async () => {
    upstream.hold();
    const leaving = new AbortController();
    const held = sdk(bob).chat.completions.create({ model, messages: [{ role: "user", content: "wait" }] }, { signal: leaving.signal });
    const arrived = upstream.requests.length + 1;
    await upstream.whenReceived(arrived);
    const refused = await thrown(() => sdk(bob).chat.completions.create({ model, messages: [{ role: "user", content: "me too" }] }));
    expect(refused).toBeInstanceOf(OpenAI.RateLimitError);
    expect(refused).toMatchObject({ code: "inference_in_flight_limit" });
    expect((refused as InstanceType<typeof OpenAI.RateLimitError>).headers.get("retry-after")).toBe("2");
    leaving.abort();
    await thrown(() => held);
    expect((await upstream.whenAborted()).request.messages).toEqual([{ role: "user", content: "wait" }]);
  });

  it("refuses calls past the client's rate with 429 and the seconds to the window's end", async () => {
    await sdk(dave).chat.completions.create({ model, messages: [{ role: "user", content: "first" }] });
    const refused = (await thrown(() => sdk(dave).chat.completions.create({ model, messages: [{ role: "user", content: "second" }] }))) as InstanceType<typeof OpenAI.RateLimitError>;
    expect(refused).toBeInstanceOf(OpenAI.RateLimitError);
    expect(refused).toMatchObject({ code: "inference_rate_limit", type: "rate_limit_error" });
    const retryAfter = Number(refused.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(3600);
  });

  it("refuses a client whose day's tokens are spent with 429 until the UTC day ends, which the SDK does not retry", async () => {
    await sdk(carol).chat.completions.create({ model, messages: [{ role: "user", content: "spend" }] });
    const before = upstream.requests.length;
    const refused = (await thrown(() => sdk(carol, { maxRetries: 2 }).chat.completions.create({ model, messages: [{ role: "user", content: "more" }] }))) as InstanceType<
      typeof OpenAI.RateLimitError
    >;
    expect(refused).toBeInstanceOf(OpenAI.RateLimitError);
    expect(refused).toMatchObject({ code: "inference_token_budget_spent", type: "insufficient_quota" });
    const now = new Date();
    const dayEnd = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(Math.floor((dayEnd - Date.now()) / 1000) - 60);
    expect(Number(refused.headers.get("retry-after"))).toBeLessThanOrEqual(86_400);
    expect(upstream.requests.length).toBe(before);
  });

  it("writes one log line a call, and the upstream's key in no answer, log line or file of the server", async () => {
    const lines = axon.logs.filter((line) => line.route === "/v1/chat/completions" && line.msg === "request");
    expect(lines.length).toBeGreaterThan(10);
    expect(lines.find((line) => line.client === "alice" && line.status === 200)).toMatchObject({ protocol: "openai", model, upstream: "hf" });
    await axon.stop();
    const everything = [JSON.stringify(axon.logs), ...answers.bodies, filesUnder(dataDir)].join("\n");
    expect(everything).toContain("Hello there");
    expect(everything).not.toContain(key);
    // The SDK saw what the upstream said to Axon's key: the scripted 401 quotes it, and Axon passed none of it on.
    expect(answers.bodies.some((body) => body.includes("upstream_failed"))).toBe(true);
  });
});
