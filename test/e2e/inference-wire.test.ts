import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAxonProcess, type AxonProcess } from "../support/axon-process.js";
import { inferenceFiles, inferenceManifest, newUpstreamKey } from "../support/inference.js";
import { secret } from "../support/operations.js";
import { ScriptedLlm } from "../support/scripted-llm/scripted-llm.js";

const run = promisify(execFile);
const [alice, operator] = [secret(), secret()];
const model = "Qwen/Qwen2.5-7B-Instruct";

/** What curl saw: the status line and headers, then the body, byte for byte. */
async function curl(url: string, args: string[]): Promise<{ status: number; headers: string; body: string }> {
  const { stdout } = await run("curl", ["--silent", "--no-buffer", "--include", ...args, url]);
  const split = stdout.indexOf("\r\n\r\n");
  const headers = stdout.slice(0, split);
  return { status: Number(/^HTTP\/[\d.]+ (\d+)/.exec(headers)?.[1]), headers: headers.toLowerCase(), body: stdout.slice(split + 4) };
}

describe("/v1 on the wire, as curl sees it", () => {
  let upstream: ScriptedLlm;
  let llm: ScriptedLlm;
  let axon: AxonProcess;
  const chat = (body: unknown, token = alice) =>
    curl(`${axon.url}/v1/chat/completions`, ["-H", `Authorization: Bearer ${token}`, "-H", "Content-Type: application/json", "--data-binary", JSON.stringify(body)]);

  beforeAll(async () => {
    upstream = await ScriptedLlm.start("openai");
    llm = await ScriptedLlm.start("openai");
    const files = inferenceFiles({
      clients: { alice },
      operator,
      admission: {},
      upstreams: { hf: { base_url: upstream.baseUrl, secret_env: "HF_TOKEN", models: ["Qwen/*"] } },
    });
    axon = await startAxonProcess({ ...files, ...llm.env, HF_TOKEN: newUpstreamKey(), AGENT_MANIFEST_FILE: inferenceManifest });
  });
  afterAll(async () => {
    await axon?.stop();
    await Promise.all([upstream?.close(), llm?.close()]);
  });

  it("streams a brokered model as server-sent events, one data line a chunk, ending with data: [DONE]", async () => {
    upstream.enqueue({ text: "one two" });
    const { status, headers, body } = await chat({ model, messages: [{ role: "user", content: "count" }], stream: true });
    expect(status).toBe(200);
    expect(headers).toMatch(/content-type: text\/event-stream/);
    const events = body.split("\n\n").filter((event) => event !== "");
    expect(events.every((event) => event.startsWith("data: "))).toBe(true);
    expect(events.at(-1)).toBe("data: [DONE]");
    const chunks = events.slice(0, -1).map((event) => JSON.parse(event.slice("data: ".length)));
    expect(chunks.map((chunk) => chunk.choices[0].delta.content ?? "").join("")).toBe("one two");
    expect(chunks.every((chunk) => chunk.object === "chat.completion.chunk")).toBe(true);
  });

  it("streams over HTTP/2 (h2c) as over HTTP/1.1", async () => {
    upstream.enqueue({ text: "over h2" });
    const { status, headers, body } = await curl(`${axon.url}/v1/chat/completions`, [
      ...["--http2-prior-knowledge", "-H", `Authorization: Bearer ${alice}`, "-H", "Content-Type: application/json"],
      ...["--data-binary", JSON.stringify({ model, messages: [{ role: "user", content: "h2" }], stream: true })],
    ]);
    expect(headers).toMatch(/^http\/2 200/);
    expect(status).toBe(200);
    expect(body.endsWith("data: [DONE]\n\n")).toBe(true);
    expect(body).toContain('"content":"over "');
  });

  it("streams a network the same way, and ends the body right after [DONE]", async () => {
    llm.enqueue({ text: "Hi." });
    const { status, body } = await chat({ model: "axon/echo", messages: [{ role: "user", content: "hello" }], stream: true });
    expect(status).toBe(200);
    expect(body.endsWith("data: [DONE]\n\n")).toBe(true);
    const chunks = body
      .split("\n\n")
      .filter((event) => event.startsWith("data: {"))
      .map((event) => JSON.parse(event.slice("data: ".length)));
    expect(chunks[0].choices[0].delta).toEqual({ role: "assistant", content: "" });
    expect(chunks.map((chunk) => chunk.choices[0].delta.content ?? "").join("")).toBe("Hi.");
    expect(chunks.at(-1)).toMatchObject({ choices: [{ finish_reason: "stop" }], chat_context: { chat_histories: [{}] } });
  });

  it("answers errors in OpenAI's shape: no key, bad JSON, a wrong method, an unknown route", async () => {
    const missing = await curl(`${axon.url}/v1/chat/completions`, ["--data-binary", "{}"]);
    expect(missing.status).toBe(401);
    expect(missing.headers).toMatch(/www-authenticate: bearer/);
    expect(JSON.parse(missing.body)).toEqual({ error: { message: "a valid client bearer secret is required", type: "authentication_error", code: "unauthenticated", param: null } });

    const notAnObject = await chat(["a list"]);
    expect(notAnObject.status).toBe(400);
    expect(JSON.parse(notAnObject.body).error).toMatchObject({ code: "invalid_request_body", param: null });
    const noModel = await chat({ messages: [{ role: "user", content: "hi" }] });
    expect(JSON.parse(noModel.body).error).toMatchObject({ code: "invalid_parameter", param: "model" });
    const unparsable = await curl(`${axon.url}/v1/chat/completions`, ["-H", `Authorization: Bearer ${alice}`, "--data-binary", "{not json"]);
    expect(JSON.parse(unparsable.body).error).toMatchObject({ type: "invalid_request_error", code: "invalid_json" });

    const wrongMethod = await curl(`${axon.url}/v1/chat/completions`, ["-H", `Authorization: Bearer ${alice}`]);
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers).toMatch(/allow: post/);

    const nowhere = await curl(`${axon.url}/v1/embeddings`, ["-H", `Authorization: Bearer ${alice}`, "--data-binary", "{}"]);
    expect(nowhere.status).toBe(404);
    expect(JSON.parse(nowhere.body).error).toMatchObject({ code: "unknown_url", type: "invalid_request_error" });
  });
});
