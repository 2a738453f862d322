import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAxonProcess, type AxonProcess } from "../support/axon-process.js";
import { alice, operationsApi, roomyAdmission, writeFiles } from "../support/operations.js";
import { ScriptedLlm } from "../support/scripted-llm/scripted-llm.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { callingTheNamedTool } from "../support/tool-script.js";
import { until } from "../support/wait.js";

const chat = (key: string, text: string, slyData: Record<string, unknown> = {}) => ({
  idempotency_key: key,
  operation: "agent.chat",
  target: { network: "thread_probe" },
  arguments: { text, sly_data: slyData },
  reason: "probe the chat thread",
});

const fixtures = {
  AGENT_MANIFEST_FILE: "test/fixtures/chat-thread/registries/manifest.hocon",
  AGENT_TOOL_PATH: "test/fixtures/chat-thread/coded_tools",
};

describe("agent.chat operations on the chat thread", () => {
  let llm: ScriptedLlm;
  let server: TestServer;
  let api: ReturnType<typeof operationsApi>;

  beforeAll(async () => {
    llm = await ScriptedLlm.start("openai");
    llm.script(callingTheNamedTool);
    server = await startTestServer({ env: { ...llm.env, ...writeFiles("http://127.0.0.1:9", roomyAdmission), ...fixtures } });
    api = operationsApi(server.url);
  });
  afterAll(async () => {
    await server.close();
    await llm.close();
  });

  const run = async (body: ReturnType<typeof chat>) => {
    const submitted = await api.post(alice, body);
    expect(submitted.status).toBe(202);
    return api.waitTerminal(alice, submitted.body.id);
  };

  it("executes off the serving thread: the coded tool runs on a worker thread and sly_data comes back", async () => {
    const done = await run(chat("where", "WhereAmI", { visits: 1 }));
    expect(done).toMatchObject({ state: "succeeded", result: { text: 'Answer: {"thread":"worker"}', sly_data: { thread: "worker", visits: 2 } } });
  });

  it("a thread that dies fails its chat as chat_thread_ended, and the next chat runs on a new one", async () => {
    const died = await run(chat("exit", "Exiter"));
    expect(died).toMatchObject({ state: "failed", error: { code: "chat_thread_ended" } });
    const after = await run(chat("after-exit", "WhereAmI"));
    expect(after).toMatchObject({ state: "succeeded", result: { sly_data: { thread: "worker", visits: 1 } } });
  });
});

describe("agent.chat operations on the chat thread of the build (node dist/main.js)", () => {
  let llm: ScriptedLlm;
  let axon: AxonProcess;

  beforeAll(async () => {
    llm = await ScriptedLlm.start("openai");
    llm.script(callingTheNamedTool);
    axon = await startAxonProcess({ ...llm.env, ...writeFiles("http://127.0.0.1:9", roomyAdmission), ...fixtures });
  });
  afterAll(async () => {
    await axon.stop();
    await llm.close();
  });

  it("runs the chat on the bundled thread, whose log records join the server's stdout", async () => {
    const api = operationsApi(axon.url);
    const submitted = await api.post(alice, chat("build-where", "WhereAmI"));
    expect(await api.waitTerminal(alice, submitted.body.id)).toMatchObject({ state: "succeeded", result: { sly_data: { thread: "worker" } } });

    const broken = await api.post(alice, chat("build-breaker", "Breaker"));
    expect(await api.waitTerminal(alice, broken.body.id)).toMatchObject({ state: "succeeded" });
    // Log lines reach stdout in batches, a few milliseconds after they are written.
    const failed = await until(() => axon.logs.find((line) => line.msg === "tool failed" && line.tool === "Breaker"), "the tool's failure logged");
    expect(failed).toMatchObject({ network: "thread_probe", service: "axon" });
  });
});
