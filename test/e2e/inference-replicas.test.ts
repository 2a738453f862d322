import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAxonProcess, type AxonProcess } from "../support/axon-process.js";
import { inferenceFiles, inferenceManifest, newUpstreamKey, openAiClient, type Answers } from "../support/inference.js";
import { secret } from "../support/operations.js";
import { createPostgresDatabase, queryPostgres, type TestDatabase } from "../support/postgres-database.js";
import { ScriptedLlm } from "../support/scripted-llm/scripted-llm.js";
import { thrown } from "../support/thrown.js";
import { until } from "../support/wait.js";

const [carol, operator] = [secret(), secret()];
const model = "Qwen/Qwen2.5-7B-Instruct";

/*
 * Two `npm start` processes on one fresh PostgreSQL database: a client's daily token budget is counted in the
 * database, so what it spends through one replica is spent on the other.
 */
describe("the daily token budget across replicas", () => {
  let upstream: ScriptedLlm;
  let database: TestDatabase;
  const replicas: AxonProcess[] = [];
  const answers: Answers = { bodies: [] };

  beforeAll(async () => {
    upstream = await ScriptedLlm.start("openai");
    database = await createPostgresDatabase();
    const files = inferenceFiles({
      clients: { carol },
      operator,
      admission: { clients: { carol: { inference_tokens_per_day: 30 } } },
      upstreams: { hf: { base_url: upstream.baseUrl, secret_env: "HF_TOKEN", models: ["Qwen/*"] } },
    });
    const env = { ...files, HF_TOKEN: newUpstreamKey(), AGENT_MANIFEST_FILE: inferenceManifest, DATABASE_URL: database.url };
    for (let index = 0; index < 2; index++) replicas.push(await startAxonProcess(env, { startupMs: 60_000 }));
  });
  afterAll(async () => {
    await Promise.all(replicas.map((replica) => replica.stop()));
    await database?.drop();
    await upstream?.close();
  });

  it("holds on the other replica once one has spent it, until the end of the UTC day", async () => {
    const [first, second] = replicas.map((replica) => openAiClient(replica.url, carol, answers));
    upstream.enqueue({ text: "a", usage: { promptTokens: 12, completionTokens: 8 } }, { text: "b", usage: { promptTokens: 6, completionTokens: 6 } });
    await first!.chat.completions.create({ model, messages: [{ role: "user", content: "one" }] });
    // The second replica reads carol's day once it is written: 20 of 30 spent, so one more call goes through.
    await until(async () => (await tokensToday()) === 20, "the first call's tokens in the database");
    await second!.chat.completions.create({ model, messages: [{ role: "user", content: "two" }] });
    await until(async () => (await tokensToday()) === 32, "the second call's tokens in the database");

    for (const client of [second!, first!]) {
      const refused = await thrown(() => client.chat.completions.create({ model, messages: [{ role: "user", content: "three" }] }));
      expect(refused).toBeInstanceOf(OpenAI.RateLimitError);
      expect(refused).toMatchObject({ code: "inference_token_budget_spent" });
    }
    expect(upstream.requests).toHaveLength(2);
  });

  async function tokensToday(): Promise<number> {
    const day = new Date().toISOString().slice(0, 10);
    const rows = await queryPostgres<{ tokens: string }>(database.url, `SELECT "tokens" FROM "InferenceTokens" WHERE "clientId" = 'carol' AND "day" = '${day}'`);
    return Number(rows[0]?.tokens ?? 0);
  }
});
