import path from "node:path";
import { create, type JsonObject } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChatRunner, ChatTurn } from "../../../src/agents/chat-runner.js";
import { CodedToolLoader } from "../../../src/agents/coded-tools.js";
import { AgentRegistry } from "../../../src/agents/registry.js";
import { AgentRuntime } from "../../../src/agents/runtime.js";
import { AxonError } from "../../../src/errors.js";
import {
  ChatMessage_ChatMessageType as MessageType,
  ChatMessageSchema,
  type ChatMessage,
} from "../../../src/gen/neuro_san/api/grpc/chat_pb.js";
import { createLlmClient } from "../../../src/llm/providers.js";
import { createLogger } from "../../../src/logger.js";
import { AgentChatProvider } from "../../../src/operations/providers/agent-chat.js";
import type { ExecutionContext, OperationToExecute } from "../../../src/operations/providers/provider.js";
import { ScriptedLlm } from "../../support/scripted-llm/scripted-llm.js";
import { projectRoot } from "../../support/server.js";

type MessageInit = Parameters<typeof create<typeof ChatMessageSchema>>[1];

const message = (init: MessageInit): ChatMessage => create(ChatMessageSchema, init);
const from = (...tools: string[]) => tools.map((tool) => ({ tool, instantiationIndex: 1 }));

/** A ChatRunner that plays back a list of steps: messages, clock moves, or an error to throw. */
class ScriptedRunner implements ChatRunner {
  readonly turns: ChatTurn[] = [];
  constructor(
    private readonly steps: (ChatMessage | { advanceMs: number } | { throw: unknown })[],
    private readonly clock: { now: number } = { now: 0 },
    private readonly refusal?: unknown,
  ) {}

  async start(turn: ChatTurn): Promise<AsyncIterable<ChatMessage>> {
    this.turns.push(turn);
    if (this.refusal !== undefined) throw this.refusal;
    const { steps, clock } = this;
    return (async function* () {
      for (const step of steps) {
        if ("advanceMs" in step) clock.now += step.advanceMs;
        else if ("throw" in step) throw step.throw;
        else yield step;
      }
    })();
  }
}

function operation(target: JsonObject, args: JsonObject): OperationToExecute {
  return { id: "op_chat_1", clientId: "client", operation: "agent.chat", target, arguments: args };
}

function context(signal = new AbortController().signal): ExecutionContext & { progress: string[] } {
  const progress: string[] = [];
  return { signal, progress, reportProgress: (summary) => progress.push(summary) };
}

const final = message({ type: MessageType.AGENT_FRAMEWORK, text: "Hello Ada", structure: { mood: "warm" }, slyData: { visits: 2 } });

describe("agent.chat", () => {
  let registry: AgentRegistry;
  beforeAll(async () => {
    registry = await AgentRegistry.load({ manifestFile: path.join(projectRoot, "test/fixtures/registries/manifest.hocon"), projectRoot });
  });
  afterAll(() => registry.close());

  const providerWith = (runner: ChatRunner, clock = { now: 0 }) =>
    new AgentChatProvider({ registry, chats: runner, now: () => clock.now, progressIntervalMs: 1000 });

  describe("validation", () => {
    const provider = () => providerWith(new ScriptedRunner([]));

    it("accepts a served network, public or private, with text and optional sly_data", () => {
      expect(provider().validate({ network: "greeter" }, { text: "hi" })).toEqual([]);
      expect(provider().validate({ network: "backroom" }, { text: "hi", sly_data: { a: 1 } })).toEqual([]);
    });

    it("refuses a network that is not served", () => {
      expect(provider().validate({ network: "retired" }, { text: "hi" })).toEqual([
        { field: "target.network", description: "no agent network by this name is served" },
      ]);
      expect(provider().validate({}, { text: "hi" })[0]?.field).toBe("target.network");
    });

    it("refuses missing, empty and oversized text, sly_data that is not an object, and unknown fields", () => {
      const fields = (target: JsonObject, args: JsonObject) => provider().validate(target, args).map((violation) => violation.field);
      expect(fields({ network: "greeter" }, {})).toEqual(["arguments.text"]);
      expect(fields({ network: "greeter" }, { text: "" })).toEqual(["arguments.text"]);
      expect(fields({ network: "greeter" }, { text: "x".repeat(100_001) })).toEqual(["arguments.text"]);
      expect(fields({ network: "greeter" }, { text: "x".repeat(100_000) })).toEqual([]);
      expect(fields({ network: "greeter" }, { text: "hi", sly_data: [1] })).toEqual(["arguments.sly_data"]);
      expect(fields({ network: "greeter", region: "eu" }, { text: "hi", chat_context: {} })).toEqual(["target.region", "arguments.chat_context"]);
    });

    it("refuses the client's own API keys (sly_data.llm_config): an operation's arguments are stored", () => {
      const violations = provider().validate({ network: "greeter" }, { text: "hi", sly_data: { llm_config: { openai_api_key: "sk-client" } } });
      expect(violations.map((violation) => violation.field)).toEqual(["arguments.sly_data.llm_config"]);
      expect(JSON.stringify(violations)).not.toContain("sk-client");
    });
  });

  describe("presentation", () => {
    it("names the network and shows the start of the text, never sly_data", () => {
      const presentation = providerWith(new ScriptedRunner([])).present(
        { network: "greeter" },
        { text: `Hello\n\tthere ${"y".repeat(300)}`, sly_data: { password: "sly-value-never-shown" } },
      );
      expect(presentation.title).toBe("Chat with greeter");
      expect(presentation.summary.startsWith("Hello there yyy")).toBe(true);
      expect(Array.from(presentation.summary)).toHaveLength(200);
      expect(JSON.stringify(presentation)).not.toContain("sly-value");
    });
  });

  describe("execution with a scripted runner", () => {
    it("runs the turn and succeeds with the final message's text, structure and sly_data", async () => {
      const runner = new ScriptedRunner([message({ type: MessageType.AGENT, origin: from("Greeter") }), final]);
      const outcome = await providerWith(runner).execute(operation({ network: "greeter" }, { text: "Hi", sly_data: { user: "ada" } }), context());
      expect(outcome).toEqual({ state: "succeeded", result: { text: "Hello Ada", structure: { mood: "warm" }, sly_data: { visits: 2 } } });
      const turn = runner.turns[0];
      expect(turn).toMatchObject({ text: "Hi", mimeData: [], slyData: { user: "ada" }, chatContext: undefined, metadata: { request_id: "op_chat_1" } });
      expect(turn?.network).toBe(registry.get("greeter"));
    });

    it("leaves structure and sly_data out when the answer has none", async () => {
      const runner = new ScriptedRunner([message({ type: MessageType.AGENT_FRAMEWORK, text: "plain" })]);
      expect(await providerWith(runner).execute(operation({ network: "greeter" }, { text: "Hi" }), context())).toEqual({
        state: "succeeded",
        result: { text: "plain" },
      });
      expect(runner.turns[0]?.slyData).toEqual({});
    });

    it("reports progress from AI and AGENT_PROGRESS messages by agent name, at most once a second and not in the first", async () => {
      const clock = { now: 0 };
      const runner = new ScriptedRunner(
        [
          message({ type: MessageType.AI, origin: from("Greeter"), text: "thinking about sly data" }),
          { advanceMs: 500 },
          message({ type: MessageType.AGENT_PROGRESS, origin: from("Greeter", "Helper"), structure: { secret: "x" } }),
          { advanceMs: 600 },
          message({ type: MessageType.AGENT_PROGRESS, origin: from("Greeter", "Helper") }),
          { advanceMs: 1000 },
          message({ type: MessageType.AGENT_PROGRESS, origin: from("Greeter", "Helper") }),
          { advanceMs: 1000 },
          message({ type: MessageType.AGENT_PROGRESS }),
          message({ type: MessageType.AGENT, origin: from("Greeter"), text: "not progress" }),
          message({ type: MessageType.AI, origin: from("Greeter"), text: "done" }),
          final,
        ],
        clock,
      );
      const execution = context();
      await providerWith(runner, clock).execute(operation({ network: "greeter" }, { text: "Hi" }), execution);
      // t=0 Greeter and t=500 Helper: within the first interval; t=1100 Helper; t=2100 the same summary again;
      // t=3100 a heartbeat without origin, then Greeter.
      expect(execution.progress).toEqual(["Helper is working", "Greeter replied"]);
    });

    it("a refusal before the stream (LLM not configured) fails with the error's reason as code", async () => {
      const refusal = new AxonError(Code.FailedPrecondition, "LLM_NOT_CONFIGURED", "no LLM key is configured for this network");
      const outcome = await providerWith(new ScriptedRunner([], undefined, refusal)).execute(operation({ network: "greeter" }, { text: "Hi" }), context());
      expect(outcome).toEqual({ state: "failed", code: "llm_not_configured", message: "no LLM key is configured for this network" });
    });

    it("an error in the middle of the stream fails the chat with a sanitized message", async () => {
      const runner = new ScriptedRunner([
        message({ type: MessageType.AI, origin: from("Greeter") }),
        { throw: new Error("upstream said Bearer abcdefGHIJKL1234567890 at https://llm.example/v1/chat?key=123\u0007") },
      ]);
      const outcome = await providerWith(runner).execute(operation({ network: "greeter" }, { text: "Hi" }), context());
      expect(outcome).toEqual({ state: "failed", code: "agent_chat_failed", message: "upstream said Bearer [REDACTED] at https://llm.example" });
    });

    it("an Axon error in the middle of the stream keeps its reason", async () => {
      const deadline = new AxonError(Code.DeadlineExceeded, "MAX_EXECUTION_SECONDS", "the chat ran past max_execution_seconds");
      const outcome = await providerWith(new ScriptedRunner([{ throw: deadline }])).execute(operation({ network: "greeter" }, { text: "Hi" }), context());
      expect(outcome).toMatchObject({ state: "failed", code: "max_execution_seconds" });
    });

    it("a stream that ends without an answer fails", async () => {
      const outcome = await providerWith(new ScriptedRunner([message({ type: MessageType.AI, origin: from("Greeter") })])).execute(
        operation({ network: "greeter" }, { text: "Hi" }),
        context(),
      );
      expect(outcome).toEqual({ state: "failed", code: "agent_chat_failed", message: "the chat ended without an answer" });
    });

    it("a chat stopped by its execution's signal is interrupted", async () => {
      const controller = new AbortController();
      const runner = new ScriptedRunner([{ throw: (controller.abort(), new DOMException("aborted", "AbortError")) }]);
      const outcome = await providerWith(runner).execute(operation({ network: "greeter" }, { text: "Hi" }), context(controller.signal));
      expect(outcome).toMatchObject({ state: "failed", code: "interrupted" });
    });

    it("a network no longer served at execution fails without starting a chat", async () => {
      const runner = new ScriptedRunner([final]);
      const outcome = await providerWith(runner).execute(operation({ network: "retired" }, { text: "Hi" }), context());
      expect(outcome).toMatchObject({ state: "failed", code: "agent_not_found" });
      expect(runner.turns).toHaveLength(0);
    });

    it("a chat cut by a crash reconciles as interrupted, never re-run", async () => {
      const runner = new ScriptedRunner([final]);
      expect(await providerWith(runner).reconcile()).toMatchObject({ state: "failed", code: "interrupted" });
      expect(runner.turns).toHaveLength(0);
    });
  });

  describe("execution on the real agent runtime against a scripted LLM", () => {
    let llm: ScriptedLlm;
    beforeAll(async () => {
      llm = await ScriptedLlm.start("openai");
    });
    afterAll(async () => {
      await llm.close();
    });

    const runtimeWith = (env: Record<string, string>) =>
      new AgentRuntime({
        registry,
        createLlm: (llmConfig) => createLlmClient(llmConfig, env),
        codedTools: new CodedToolLoader(path.join(projectRoot, "test/fixtures/runtime/coded_tools")),
        logger: createLogger("silent"),
        maxConcurrentChats: 0,
        heartbeatSeconds: 0,
      });

    it("succeeds with the network's answer and reports progress on the way", async () => {
      const provider = new AgentChatProvider({ registry, chats: runtimeWith(llm.env), progressIntervalMs: 0 });
      const execution = context();
      const outcome = await provider.execute(operation({ network: "greeter" }, { text: "Ada" }), execution);
      expect(outcome).toMatchObject({ state: "succeeded", result: { text: expect.stringContaining("Answer") } });
      expect(execution.progress.length).toBeGreaterThan(0);
      expect(llm.requests.length).toBeGreaterThan(0);
    });

    it("without an LLM key fails as llm_not_configured before any LLM request", async () => {
      const before = llm.requests.length;
      const provider = new AgentChatProvider({ registry, chats: runtimeWith({}) });
      const outcome = await provider.execute(operation({ network: "greeter" }, { text: "Ada" }), context());
      expect(outcome).toMatchObject({ state: "failed", code: "llm_not_configured", message: expect.stringContaining("OPENAI_API_KEY") });
      expect(llm.requests.length).toBe(before);
    });
  });
});
