import type { JsonObject } from "@bufbuild/protobuf";
import type { ChatRunner } from "../../../src/agents/chat-runner.js";
import { createAgentRuntime, type ConfiguredRuntime } from "../../../src/agents/configured-runtime.js";
import { AgentRegistry } from "../../../src/agents/registry.js";
import { loadConfig } from "../../../src/config.js";
import { ChatMessage_ChatMessageType as MessageType, type ChatMessage } from "../../../src/gen/neuro_san/api/grpc/chat_pb.js";
import { createLogger } from "../../../src/logger.js";
import { NetworkFolder } from "../fixture.js";
import { ScriptedLlm, type ScriptedKind } from "../../support/scripted-llm/scripted-llm.js";
import { projectRoot } from "../../support/server.js";

/** Networks of middleware tests, served by an in-process runtime against a scripted OpenAI-compatible LLM. */
export class MiddlewareNetworks {
  private constructor(
    readonly llm: ScriptedLlm,
    readonly folder: NetworkFolder,
    readonly registry: AgentRegistry,
    readonly runtime: ConfiguredRuntime,
  ) {}

  /** `networks`: file stem -> HOCON text; `env` adds to the runtime's environment (AXON_PYTHON, PYTHONPATH...). */
  static async start(networks: Record<string, string>, env: Record<string, string> = {}, toolPath?: string, kind: ScriptedKind = "openai"): Promise<MiddlewareNetworks> {
    const llm = await ScriptedLlm.start(kind);
    const manifest = `{ ${Object.keys(networks).map((name) => `"${name}.hocon": true`).join(", ")} }`;
    const folder = await NetworkFolder.create({
      "manifest.hocon": manifest,
      ...Object.fromEntries(Object.entries(networks).map(([name, text]) => [`${name}.hocon`, text])),
    });
    const environment = { ...llm.env, ...env, AGENT_MANIFEST_FILE: folder.path("manifest.hocon"), ...(toolPath === undefined ? {} : { AGENT_TOOL_PATH: toolPath }) };
    const config = loadConfig(environment, projectRoot);
    const registry = await AgentRegistry.load({ manifestFile: config.manifestFile, projectRoot, toolPath: config.toolPath, environment });
    const runtime = createAgentRuntime(config, registry, environment, createLogger("silent"));
    return new MiddlewareNetworks(llm, folder, registry, runtime);
  }

  /** One turn: every message the client gets, MAXIMAL, and the final one's text. */
  async chat(network: string, text: string, options: { slyData?: JsonObject; runner?: ChatRunner; signal?: AbortSignal } = {}): Promise<Chat> {
    const chat = await (options.runner ?? this.runtime).start({
      network: this.registry.require(network),
      text,
      mimeData: [],
      slyData: options.slyData ?? {},
      chatContext: undefined,
      metadata: {},
      signal: options.signal ?? new AbortController().signal,
    });
    const messages: ChatMessage[] = [];
    for await (const message of chat) messages.push(message);
    return new Chat(messages);
  }

  async close(): Promise<void> {
    await this.runtime.close();
    this.registry.close();
    await this.llm.close();
    await this.folder.remove();
  }
}

export class Chat {
  constructor(readonly messages: ChatMessage[]) {}

  get answer(): string {
    return this.messages.at(-1)!.text;
  }

  /** The messages of one agent (by the last step of their origin), as type and text. */
  of(agent: string): { type: string; text: string }[] {
    return this.messages.filter((message) => message.origin.at(-1)?.tool === agent).map((message) => ({ type: MessageType[message.type], text: message.text }));
  }

  /** Everything the client got, as one text: to assert what never reached it. */
  get everything(): string {
    return JSON.stringify(this.messages.map((message) => ({ text: message.text, structure: message.structure, chatContext: message.chatContext })));
  }
}
