import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChatRunner } from "../../src/agents/chat-runner.js";
import { createAgentRuntime } from "../../src/agents/configured-runtime.js";
import { AgentRegistry } from "../../src/agents/registry.js";
import { loadConfig } from "../../src/config.js";
import { ChatMessage_ChatMessageType as MessageType, type ChatMessage } from "../../src/gen/neuro_san/api/grpc/chat_pb.js";
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

  it("ends with its cancellation and never invokes the coded tool it was loading when cancelled", async () => {
    const cancel = new AbortController();
    const cancelled = new Error("the client cancelled");
    const messages: ChatMessage[] = [];
    const chat = await runtime.start({
      network: registry.require("cancellation"),
      text: "SlowToLoad",
      mimeData: [],
      slyData: {},
      chatContext: undefined,
      metadata: {},
      signal: cancel.signal,
    });
    const ended = (async () => {
      for await (const message of chat) messages.push(message);
    })();

    await slowLoading.started.promise;
    cancel.abort(cancelled);
    slowLoading.finish.resolve();

    await expect(ended).rejects.toBe(cancelled);
    expect(slowLoading.invocations).toBe(0);
    expect(messages.filter((message) => message.type === MessageType.AGENT_TOOL_RESULT)).toEqual([]);
  });
});
