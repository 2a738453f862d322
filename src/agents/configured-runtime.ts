import type { Config } from "../config.js";
import type { Logger } from "../logger.js";
import type { ChatRunner } from "./chat-runner.js";
import { CodedToolLoader } from "./coded-tools.js";
import { PythonPool, pythonSettingsOf } from "./python/python-pool.js";
import type { AgentRegistry } from "./registry.js";
import { AgentRuntime } from "./runtime.js";
import type { ToolCallHolds } from "./tool-call-holds.js";
import type { DeployTemporaryNetworks } from "./temporary-networks.js";

/** A runtime that owns processes: `close` ends its Python workers. */
export interface ConfiguredRuntime extends ChatRunner {
  close(): Promise<void>;
}

/**
 * The agent runtime as the server runs it: in the chat thread for StreamingChat and agent.chat operations, and
 * on the loop in `axon mcp`. The LLM SDKs take a third of start-up to load, so they load with the first chat.
 */
export function createAgentRuntime(
  config: Config,
  registry: AgentRegistry,
  env: NodeJS.ProcessEnv,
  logger: Logger,
  /** Where tool calls wait for an operator (the chat thread's way to the broker). */
  holds?: ToolCallHolds,
  deployTemporaryNetworks?: DeployTemporaryNetworks,
): ConfiguredRuntime {
  let providers: typeof import("../llm/providers.js") | undefined;
  let loading: Promise<typeof import("../llm/providers.js")> | undefined;
  const python = new PythonPool(pythonSettingsOf(config), logger);
  const runtime = new AgentRuntime({
    registry,
    // The runtime asks for LLM clients only within a chat, and a chat starts once the providers are in.
    createLlm: (llmConfig, context) => providers!.createLlmClient(llmConfig, env, { logger, ...context }),
    codedTools: new CodedToolLoader(config.toolPath, python),
    logger,
    maxConcurrentChats: config.maxConcurrentRequests,
    heartbeatSeconds: config.heartbeatSeconds,
    ...(holds === undefined ? {} : { holds }),
    ...(deployTemporaryNetworks === undefined ? {} : { deployTemporaryNetworks }),
  });
  return {
    async start(turn) {
      providers ??= await (loading ??= import("../llm/providers.js"));
      return runtime.start(turn);
    },
    close: () => python.close(),
  };
}

