import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { create } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ChatThread } from "../../../src/agents/chat-thread/chat-thread.js";
import type { ChatRunner, ChatTurn } from "../../../src/agents/chat-runner.js";
import { createAgentRuntime } from "../../../src/agents/configured-runtime.js";
import { filterChatMessages } from "../../../src/agents/filters.js";
import { AgentRegistry } from "../../../src/agents/registry.js";
import { loadConfig } from "../../../src/config.js";
import { AxonError } from "../../../src/errors.js";
import { ChatFilter_ChatFilterType as ChatFilterType } from "../../../src/gen/neuro_san/api/grpc/agent_pb.js";
import { ChatMessage_ChatMessageType as MessageType, ChatMessageSchema, type ChatMessage } from "../../../src/gen/neuro_san/api/grpc/chat_pb.js";
import { createLogger } from "../../../src/logger.js";
import { ScriptedLlm } from "../../support/scripted-llm/scripted-llm.js";
import { projectRoot } from "../../support/server.js";
import { callingFirst, callingTheNamedTool } from "../../support/tool-script.js";

const fixtures = {
  AGENT_MANIFEST_FILE: "test/fixtures/chat-thread/registries/manifest.hocon",
  AGENT_TOOL_PATH: "test/fixtures/chat-thread/coded_tools",
};

async function collect(messages: AsyncIterable<ChatMessage>): Promise<ChatMessage[]> {
  const collected: ChatMessage[] = [];
  for await (const message of messages) collected.push(message);
  return collected;
}

/**
 * Reads a Waiter's chat up to the progress message that says it waits for its cancellation: a cancel sent earlier could
 * reach the chat before its tool listens for it.
 */
async function untilWaiting(messages: AsyncIterator<ChatMessage>): Promise<void> {
  for (let next = await messages.next(); !next.done; next = await messages.next()) {
    if (next.value.structure?.["waiting"] === true) return;
  }
  throw new Error("the chat ended before its Waiter waited");
}

/** What a message says, without the time it took (which differs run to run). */
function comparable(message: ChatMessage): ChatMessage {
  const { time_taken_in_seconds: _, ...structure } = message.structure ?? {};
  return create(ChatMessageSchema, { ...message, ...(message.structure ? { structure } : {}) });
}

describe("the chat thread", () => {
  let llm: ScriptedLlm;
  let registry: AgentRegistry;
  let env: Record<string, string>;
  const logLines: string[] = [];
  const threads: ChatThread[] = [];

  const threadWith = (threadEnv: Record<string, string>, level = "warn") => {
    const config = loadConfig(threadEnv, projectRoot);
    const logger = createLogger(level, { write: (line: string) => void logLines.push(line) });
    const thread = new ChatThread({ config, env: threadEnv, logger });
    threads.push(thread);
    return thread;
  };
  const turn = (text: string, init: Partial<ChatTurn> = {}): ChatTurn => ({
    network: registry.require("thread_probe"),
    text,
    mimeData: [],
    slyData: {},
    chatContext: undefined,
    metadata: { request_id: "req-1" },
    signal: new AbortController().signal,
    ...init,
  });
  const finalOf = (messages: ChatMessage[]) => messages.find((message) => message.type === MessageType.AGENT_FRAMEWORK);

  beforeAll(async () => {
    llm = await ScriptedLlm.start("openai");
    env = { ...llm.env, ...fixtures, LOG_LEVEL: "warn" };
    const config = loadConfig(env, projectRoot);
    registry = await AgentRegistry.load({ manifestFile: config.manifestFile, projectRoot, toolPath: config.toolPath });
  });
  afterAll(async () => {
    await Promise.all(threads.map((thread) => thread.close()));
    registry.close();
    await llm.close();
  });
  beforeEach(() => {
    llm.reset();
    llm.script(callingTheNamedTool);
    logLines.length = 0;
  });

  it("runs a chat's coded tools on the thread and carries sly_data both ways", async () => {
    const messages = await collect(await threadWith(env).start(turn("WhereAmI", { slyData: { visits: 1, secret: "kept" } })));
    expect(finalOf(messages)).toMatchObject({ slyData: { thread: "worker", visits: 2, secret: "kept" } });
    expect(messages.at(-1)?.type).toBe(MessageType.AGENT_FRAMEWORK);
  });

  it("gives the same messages as the runtime on the serving loop", async () => {
    // A tool that behaves alike on any thread: WhereAmI would tell them apart.
    llm.script(callingFirst(() => ({ name: "Breaker" })));
    const onLoop: ChatRunner = createAgentRuntime(loadConfig(env, projectRoot), registry, env, createLogger("silent"));
    const chatContext = finalOf(await collect(await onLoop.start(turn("Hello"))))!.chatContext;
    const next = turn("Hello again", { chatContext, slyData: { visits: 5 } });
    const expected = await collect(await onLoop.start(next));
    const actual = await collect(await threadWith(env).start(next));
    expect(actual.map(comparable)).toEqual(expected.map(comparable));
    expect(actual.length).toBeGreaterThan(2);
  });

  it("sends back only what the turn's filter lets through: the runtime's messages, filtered", async () => {
    llm.script(callingFirst(() => ({ name: "Breaker" })));
    const onLoop: ChatRunner = createAgentRuntime(loadConfig(env, projectRoot), registry, env, createLogger("silent"));
    const expected = await collect(filterChatMessages(await onLoop.start(turn("Hello")), ChatFilterType.MINIMAL));
    const actual = await collect(await threadWith(env).start(turn("Hello", { filter: ChatFilterType.MINIMAL })));
    expect(actual.map(comparable)).toEqual(expected.map(comparable));
    expect(actual.map((message) => message.type)).toEqual([MessageType.AGENT_FRAMEWORK]);
  });

  it("refuses before streaming with the AxonError the runtime threw, reason, code, message and metadata intact", async () => {
    const unkeyed = threadWith({ ...fixtures });
    const refusal = await unkeyed.start(turn("Hello")).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(AxonError);
    expect(refusal).toMatchObject({ code: Code.FailedPrecondition, reason: "LLM_NOT_CONFIGURED", message: expect.stringContaining("OPENAI_API_KEY") });

    const gone = await unkeyed.start(turn("Hello", { network: { ...registry.require("thread_probe"), name: "nowhere" } })).catch((error: unknown) => error);
    expect(gone).toMatchObject({ code: Code.NotFound, reason: "AGENT_NOT_FOUND", metadata: { agent_name: "nowhere" } });
    expect(llm.requests).toHaveLength(0);
  });

  it("cancels the chats in the thread when their signal aborts, one signal shared by many as the worker shares it", async () => {
    const warnings: Error[] = [];
    const warned = (warning: Error) => warnings.push(warning);
    process.on("warning", warned);
    try {
      const stopping = new AbortController();
      const thread = threadWith(env);
      const chats = await Promise.all(Array.from({ length: 12 }, async () => (await thread.start(turn("Waiter", { signal: stopping.signal })))[Symbol.asyncIterator]()));
      // Each Waiter's progress message says it is waiting on its chat's own signal, in the thread.
      for (const messages of chats) await untilWaiting(messages);
      stopping.abort();
      for (const messages of chats) await expect(drain(messages)).rejects.toThrow();
      expect(warnings.map((warning) => warning.name)).not.toContain("MaxListenersExceededWarning");
    } finally {
      process.off("warning", warned);
    }
  });

  it("fails the chats a dying thread takes with it as CHAT_THREAD_ENDED, and the next chat starts a new thread", async () => {
    const thread = threadWith(env, "error");
    const waiting = await thread.start(turn("Waiter"));
    const exiting = await thread.start(turn("Exiter"));
    for (const messages of [exiting, waiting]) {
      await expect(collect(messages)).rejects.toMatchObject({ code: Code.Unavailable, reason: "CHAT_THREAD_ENDED" });
    }
    expect(logLines.map((line) => JSON.parse(line))).toContainEqual(expect.objectContaining({ msg: "the chat thread ended with chats running" }));

    const after = await collect(await thread.start(turn("WhereAmI")));
    expect(finalOf(after)?.slyData).toMatchObject({ thread: "worker", visits: 1 });
  });

  it("refuses chats past AGENT_MAX_CONCURRENT_REQUESTS, and counts afresh on the thread that follows one that died", async () => {
    const thread = threadWith({ ...env, AGENT_MAX_CONCURRENT_REQUESTS: "1" }, "error");
    const tooMany = { code: Code.ResourceExhausted, reason: "TOO_MANY_CHATS" };

    const cancel = new AbortController();
    const waiting = (await thread.start(turn("Waiter", { signal: cancel.signal })))[Symbol.asyncIterator]();
    await expect(thread.start(turn("Hello"))).rejects.toMatchObject(tooMany);
    await untilWaiting(waiting);
    cancel.abort();
    await expect(drain(waiting)).rejects.toThrow();
    await collect(await thread.start(turn("Hello")));

    // The chat the dying thread counted goes with it.
    await expect(collect(await thread.start(turn("Exiter")))).rejects.toMatchObject({ reason: "CHAT_THREAD_ENDED" });
    await collect(await thread.start(turn("Hello")));
  });

  it("serves a network the server's registry has just reloaded, catching up with it", async () => {
    const registries = mkdtempSync(path.join(os.tmpdir(), "axon-chat-thread-"));
    try {
      const manifest = path.join(registries, "manifest.hocon");
      copyFileSync(path.join(projectRoot, "test/fixtures/chat-thread/registries/thread_probe.hocon"), path.join(registries, "thread_probe.hocon"));
      writeFileSync(manifest, `{ "thread_probe.hocon": true }`);
      const reloading = { ...env, AGENT_MANIFEST_FILE: manifest };
      const serving = await AgentRegistry.load({ manifestFile: manifest, projectRoot });
      const thread = threadWith(reloading);
      await collect(await thread.start(turn("WhereAmI"))); // the thread has loaded the manifest as it was

      writeFileSync(path.join(registries, "second.hocon"), `{ llm_config { model_name: "gpt-4o-mini" }, tools: [{ name: "Second", instructions: "Answer." }] }`);
      writeFileSync(manifest, `{ "thread_probe.hocon": true, "second.hocon": true }`);
      await serving.reload();
      const messages = await collect(await thread.start(turn("Hello", { network: serving.require("second") })));
      expect(finalOf(messages)?.text).toBe("Answer: Hello");
      serving.close();
    } finally {
      rmSync(registries, { recursive: true, force: true });
    }
  });

  it("writes the thread's log records to the server's logger, at its level", async () => {
    const messages = await collect(await threadWith(env).start(turn("Breaker")));
    expect(finalOf(messages)).toBeDefined();
    const records = logLines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(records).toContainEqual(expect.objectContaining({ level: 40, msg: "tool failed", tool: "Breaker", network: "thread_probe", service: "axon" }));
    expect(records.filter((record) => (record.level as number) < 40)).toEqual([]);
  });
});

async function drain(messages: AsyncIterator<ChatMessage>): Promise<void> {
  for (let next = await messages.next(); !next.done; next = await messages.next());
}
