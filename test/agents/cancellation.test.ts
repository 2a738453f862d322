import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChatRunner } from "../../src/agents/chat-runner.js";
import { createAgentRuntime } from "../../src/agents/configured-runtime.js";
import { CodedToolLoader } from "../../src/agents/coded-tools.js";
import { AgentRegistry } from "../../src/agents/registry.js";
import { AgentRuntime } from "../../src/agents/runtime.js";
import { loadConfig } from "../../src/config.js";
import { ChatMessage_ChatMessageType as MessageType, type ChatMessage } from "../../src/gen/neuro_san/api/grpc/chat_pb.js";
import type { LlmResponse } from "../../src/llm/llm.js";
import { createLogger } from "../../src/logger.js";
import { slowLoading } from "../fixtures/cancellation/slow-loading.js";
import { ScriptedLlm } from "../support/scripted-llm/scripted-llm.js";
import { projectRoot } from "../support/server.js";
import { callingTheNamedTool } from "../support/tool-script.js";

// The runtime runs on this loop, so the coded tool's module and this test share `slowLoading`.
describe("a cancelled chat", () => {
  let llm: ScriptedLlm;
  let registry: AgentRegistry;
  let runtime: ChatRunner;

  beforeAll(async () => {
    llm = await ScriptedLlm.start("openai");
    llm.script(callingTheNamedTool);
    const env = {
      ...llm.env,
      AGENT_MANIFEST_FILE: "test/fixtures/cancellation/registries/manifest.hocon",
      AGENT_TOOL_PATH: "test/fixtures/cancellation/coded_tools",
    };
    const config = loadConfig(env, projectRoot);
    registry = await AgentRegistry.load({ manifestFile: config.manifestFile, projectRoot, toolPath: config.toolPath });
    runtime = createAgentRuntime(config, registry, env, createLogger("silent"));
  });
  afterAll(async () => {
    registry.close();
    await llm.close();
  });

  /** Starts the fixture's chat asking for SlowToLoad: the messages as they come, and the chat's end. */
  async function chatFor(runner: ChatRunner, signal: AbortSignal): Promise<{ messages: ChatMessage[]; ended: Promise<void> }> {
    const messages: ChatMessage[] = [];
    const chat = await runner.start({
      network: registry.require("cancellation"),
      text: "SlowToLoad",
      mimeData: [],
      slyData: {},
      chatContext: undefined,
      metadata: {},
      signal,
    });
    const ended = (async () => {
      for await (const message of chat) messages.push(message);
    })();
    return { messages, ended };
  }

  it("ends with its cancellation and never invokes the coded tool it was loading when cancelled", async () => {
    const cancel = new AbortController();
    const cancelled = new Error("the client cancelled");
    const { messages, ended } = await chatFor(runtime, cancel.signal);

    await slowLoading.started.promise;
    cancel.abort(cancelled);
    slowLoading.finish.resolve();

    await expect(ended).rejects.toBe(cancelled);
    expect(slowLoading.invocations).toBe(0);
    expect(messages.filter((message) => message.type === MessageType.AGENT_TOOL_RESULT)).toEqual([]);
  });

  // What the SDKs hand back when a streamed answer is cut short by the cancellation: whatever had arrived, quietly.
  it.each([
    ["a partial answer", { text: "The answer is", toolCalls: [] }],
    ["the tool calls that had arrived", { text: "", toolCalls: [{ id: "call_1", name: "SlowToLoad", arguments: {} }] }],
  ])("ends with its cancellation when the LLM's reply comes back cut short by it, and acts on none of %s", async (_, cutShort) => {
    const cancel = new AbortController();
    const cancelled = new Error("the client cancelled");
    const cutShortRuntime = new AgentRuntime({
      registry,
      createLlm: () => ({
        description: "an LLM whose reply the cancellation cut short",
        async complete(): Promise<LlmResponse> {
          cancel.abort(cancelled);
          return { ...cutShort, usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2, cost: 0 }, model: "cut-short" };
        },
      }),
      codedTools: new CodedToolLoader("test/fixtures/cancellation/coded_tools"),
      logger: createLogger("silent"),
      maxConcurrentChats: 0,
      heartbeatSeconds: 0,
    });
    const { messages, ended } = await chatFor(cutShortRuntime, cancel.signal);

    await expect(ended).rejects.toBe(cancelled);
    // The system and human messages went out before the LLM was asked; nothing of its reply did.
    expect(messages.map((message) => message.type)).toEqual([MessageType.SYSTEM, MessageType.HUMAN]);
  });
});
