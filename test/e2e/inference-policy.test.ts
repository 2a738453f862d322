import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAxonProcess, type AxonProcess } from "../support/axon-process.js";
import { inferenceFiles, inferenceManifest, newUpstreamKey, openAiClient, type Answers } from "../support/inference.js";
import { secret } from "../support/operations.js";
import { ScriptedLlm } from "../support/scripted-llm/scripted-llm.js";
import { thrown } from "../support/thrown.js";

type Json = Record<string, any>;

const [alice, bob, operator] = [secret(), secret(), secret()];
const qwen = "Qwen/Qwen2.5-7B-Instruct";
const llama = "meta-llama/Llama-3.1-8B-Instruct";
const gemma = "google/gemma-2-9b-it";
// Small Qwen calls go ahead; Llama never; anything else waits for an operator, who may open a window for it. bob may
// list nothing.
const policy = {
  rules: [
    { id: "small-qwen", effect: "allow", operations: ["inference.chat"], targets: [{ kind: "model", upstream: "hf", name: "Qwen/*" }], limits: { max_tokens: 100 } },
    { id: "no-llama", effect: "deny", operations: ["inference.chat"], targets: [{ name: "meta-llama/*" }] },
    { id: "ask", effect: "request", operations: ["inference.chat"], grant_policy: { mode: "window", default_minutes: 30, max_uses: 10 } },
    { id: "listing", effect: "allow", clients: ["alice"], operations: ["inference.models.list"] },
  ],
};

describe("brokered calls decided by AXON_POLICY_FILE", () => {
  let upstream: ScriptedLlm;
  let axon: AxonProcess;
  let dataDir: string;
  const answers: Answers = { bodies: [] };
  const sdk = (apiKey = alice) => openAiClient(axon.url, apiKey, answers);
  const operatorCall = async (method: string, route: string, body?: Json): Promise<Json> => {
    const response = await fetch(axon.url + route, {
      method,
      headers: { authorization: `Bearer ${operator}`, "content-type": "application/json" },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    return (await response.json()) as Json;
  };

  beforeAll(async () => {
    upstream = await ScriptedLlm.start("openai");
    upstream.models = [qwen, llama, gemma];
    dataDir = mkdtempSync(path.join(os.tmpdir(), "axon-inference-policy-"));
    const files = inferenceFiles({
      clients: { alice, bob },
      operator,
      admission: {},
      policy,
      upstreams: { hf: { base_url: upstream.baseUrl, secret_env: "HF_TOKEN", models: ["*"] } },
    });
    axon = await startAxonProcess({ ...files, HF_TOKEN: newUpstreamKey(), AGENT_MANIFEST_FILE: inferenceManifest, AXON_DATA_DIR: dataDir });
  });
  afterAll(async () => {
    await axon?.stop();
    await upstream?.close();
  });

  it("forwards a call a rule allows, within the rule's limits", async () => {
    upstream.enqueue({ text: "small", usage: { promptTokens: 3, completionTokens: 2 } });
    const completion = await sdk().chat.completions.create({ model: qwen, messages: [{ role: "user", content: "hi" }], max_tokens: 50 });
    expect(completion.choices[0]!.message.content).toBe("small");
  });

  it("refuses a call a deny rule matches with 403 naming the rule, and forwards nothing", async () => {
    const before = upstream.requests.length;
    const refused = await thrown(() => sdk().chat.completions.create({ model: llama, messages: [{ role: "user", content: "hi" }] }));
    expect(refused).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(refused).toMatchObject({ code: "operation_policy_denied", type: "permission_error" });
    expect((refused as Error).message).toContain("no-llama");
    expect(upstream.requests.length).toBe(before);
  });

  it("answers a call past a rule's limits that a request rule matches with 403 and one pending request, which an operator's window then serves, one use a call", async () => {
    const before = upstream.requests.length;
    const big = () => sdk().chat.completions.create({ model: qwen, messages: [{ role: "user", content: "a long essay" }], max_tokens: 4000 });
    const first = (await thrown(big)) as InstanceType<typeof OpenAI.PermissionDeniedError>;
    expect(first).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(first).toMatchObject({ code: "approval_pending" });
    const requestId = /request (req_[A-Za-z0-9_-]+)/.exec(first.message)?.[1];
    expect(requestId).toBeDefined();
    expect(first.headers.get("x-axon-approval-request")).toBe(requestId);
    const again = (await thrown(big)) as Error;
    expect(again.message).toContain(requestId);
    expect(upstream.requests.length).toBe(before);

    const request = await operatorCall("GET", `/api/operator/v1/requests/${requestId}`);
    expect(request).toMatchObject({ status: "pending", operation: "inference.chat", target: { kind: "model", upstream: "hf", name: qwen } });
    const approved = await operatorCall("POST", `/api/operator/v1/requests/${requestId}/approve`, { expected_revision: request.revision, max_uses: 2 });
    expect(approved.status).toBe("active");

    // An upstream failure gives its use back; each call that reaches the upstream spends one.
    upstream.failNext(500);
    expect(await thrown(big)).toBeInstanceOf(OpenAI.InternalServerError);
    await big();
    await big();
    const spent = (await thrown(big)) as Error;
    expect(spent).toMatchObject({ code: "approval_pending" });
    expect(spent.message).not.toContain(requestId);
    expect(upstream.requests.length).toBe(before + 3);
  });

  it("lists only the upstreams whose listing policy allows the client", async () => {
    expect((await sdk(alice).models.list()).data.map((model) => model.id)).toEqual(["axon/echo", "axon/helpdesk", qwen, llama, gemma]);
    expect((await sdk(bob).models.list()).data.map((model) => model.id)).toEqual(["axon/echo", "axon/helpdesk"]);
  });

  it("keeps each call in the audit with its model, its outcome and the tokens it used", async () => {
    await axon.stop();
    const database = new Database(path.join(dataDir, "axon.db"), { readonly: true });
    try {
      const rows = database.prepare(`SELECT "action", "detail" FROM "AuditRecord" WHERE "action" LIKE 'native.%' ORDER BY "id"`).all() as { action: string; detail: string }[];
      const records: Json[] = rows.map((row) => ({ action: row.action, ...(JSON.parse(row.detail) as Json) }));
      expect(records.find((record) => record.action === "native.succeeded" && record.rule === "small-qwen")).toMatchObject({
        operation: "inference.chat",
        target: { kind: "model", upstream: "hf", name: qwen },
        call: { model: qwen, upstream: "hf", messages: 1, max_tokens: 50 },
        outcome: { status: 200, prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
      });
      expect(records.find((record) => record.action === "native.denied")).toMatchObject({ rule: "no-llama", target: { name: llama } });
    } finally {
      database.close();
    }
  });
});
