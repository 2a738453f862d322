import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chatUrl, InferenceFileError, loadUpstreams, parseUpstreams, Upstreams, upstreamUrl } from "../../src/inference/upstreams.js";

let folder: string;
beforeAll(async () => {
  folder = await mkdtemp(path.join(tmpdir(), "axon-upstreams-"));
});
afterAll(async () => {
  await rm(folder, { recursive: true, force: true });
});

const hf = { base_url: "https://router.huggingface.co/v1/", secret_env: "HF_TOKEN", models: ["meta-llama/*", "Qwen/*"] };

describe("the inference file (AXON_INFERENCE_FILE)", () => {
  it("reads HOCON, one key per upstream, in the file's order, with the defaults OpenAI's API takes", async () => {
    const file = path.join(folder, "inference.hocon");
    await writeFile(
      file,
      `hf { base_url: "https://router.huggingface.co/v1", secret_env: HF_TOKEN, models: ["meta-llama/*", "Qwen/*"] }
       local { base_url: "http://127.0.0.1:11434/v1", secret_env: OLLAMA_KEY, models: ["*"], models_path: null }`,
    );
    const upstreams = await loadUpstreams(file, { HF_TOKEN: "hf_x" });
    expect(upstreams.all.map((upstream) => upstream.name)).toEqual(["hf", "local"]);
    expect(upstreams.all[0]).toEqual({
      name: "hf",
      baseUrl: "https://router.huggingface.co/v1",
      models: ["meta-llama/*", "Qwen/*"],
      secretEnv: "HF_TOKEN",
      header: "Authorization",
      scheme: "Bearer",
      query: {},
      chatPath: "/chat/completions",
      modelsPath: "/models",
      streamUsage: true,
      idleTimeoutSeconds: 300,
    });
    expect(upstreams.all[1]!.modelsPath).toBeUndefined();
  });

  it("routes a model to the first upstream whose globs match it", () => {
    const [first, second] = parseUpstreams({ hf, rest: { ...hf, models: ["*"] } }, "f");
    const upstreams = new Upstreams([first!, second!]);
    expect(upstreams.route("Qwen/Qwen2.5-7B")?.name).toBe("hf");
    expect(upstreams.route("gpt-4o")?.name).toBe("rest");
  });

  it("reads the key from the environment when asked, an empty variable being none", () => {
    const [upstream] = parseUpstreams({ hf }, "f");
    expect(new Upstreams([upstream!], { HF_TOKEN: "hf_x" }).secretOf(upstream!)).toBe("hf_x");
    expect(new Upstreams([upstream!], { HF_TOKEN: "" }).secretOf(upstream!)).toBeUndefined();
  });

  it("speaks Azure OpenAI when told to: the api-key header with the bare key, the deployment in the path, api-version in the query", () => {
    const [azure] = parseUpstreams(
      {
        azure: {
          base_url: "https://example.openai.azure.com/openai",
          secret_env: "AZURE_OPENAI_API_KEY",
          models: ["gpt-4o"],
          header: "api-key",
          query: { "api-version": "2024-10-21" },
          chat_path: "/deployments/{model}/chat/completions",
          models_path: null,
        },
      },
      "f",
    );
    expect(azure).toMatchObject({ header: "api-key", scheme: undefined });
    expect(chatUrl(azure!, "gpt-4o").href).toBe("https://example.openai.azure.com/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21");
    expect(upstreamUrl(azure!, "/models").search).toBe("?api-version=2024-10-21");
  });

  const invalid: [string, unknown, string][] = [
    ["a top level that is no object", [], ""],
    ["a bad upstream name", { "-x": hf }, "-x"],
    ["an unknown field", { hf: { ...hf, key: "hf_secret" } }, "hf.key"],
    ["no base_url", { hf: { ...hf, base_url: undefined } }, "hf.base_url"],
    ["a base_url with a password", { hf: { ...hf, base_url: "https://u:p@example.com" } }, "hf.base_url"],
    ["a base_url with a query", { hf: { ...hf, base_url: "https://example.com/v1?key=x" } }, "hf.base_url"],
    ["a secret_env that is no variable name", { hf: { ...hf, secret_env: "hf token" } }, "hf.secret_env"],
    ["no models", { hf: { ...hf, models: [] } }, "hf.models"],
    ["an empty model glob", { hf: { ...hf, models: [""] } }, "hf.models[0]"],
    ["a header the HTTP client owns", { hf: { ...hf, header: "Content-Length" } }, "hf.header"],
    ["a query value that is no string", { hf: { ...hf, query: { "api-version": 1 } } }, "hf.query.api-version"],
    ["a chat_path without its slash", { hf: { ...hf, chat_path: "chat" } }, "hf.chat_path"],
    ["an idle timeout past an hour", { hf: { ...hf, idle_timeout_seconds: 7200 } }, "hf.idle_timeout_seconds"],
  ];
  it.each(invalid)("refuses %s, naming the key", (_, document, key) => {
    let error: unknown;
    try {
      parseUpstreams(JSON.parse(JSON.stringify(document)), "/etc/axon/inference.hocon");
    } catch (thrown) {
      error = thrown;
    }
    expect(error).toBeInstanceOf(InferenceFileError);
    expect((error as InferenceFileError).key).toBe(key);
    expect((error as Error).message).not.toContain("hf_secret");
  });

  it("refuses a file that is set but missing, naming it", async () => {
    const missing = path.join(folder, "missing.hocon");
    await expect(loadUpstreams(missing, {})).rejects.toThrow(InferenceFileError);
    await expect(loadUpstreams(missing, {})).rejects.toThrow(missing);
  });

  it("without a file serves no upstream", async () => {
    expect((await loadUpstreams(undefined, {})).all).toEqual([]);
  });
});
