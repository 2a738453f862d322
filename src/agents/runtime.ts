import type { JsonObject } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { AxonError } from "../errors.js";
import { ChatMessage_ChatMessageType as MessageType, type ChatMessage, type Origin } from "../gen/neuro_san/api/grpc/chat_pb.js";
import { mergeLlmConfig, takesClientKeys } from "../llm/config.js";
import { isJsonObject } from "../json.js";
import type { LlmClient } from "../llm/llm.js";
import type { LlmInfo } from "../llm/llm-info.js";
import type { Logger } from "../logger.js";
import { activationOf } from "./activation.js";
import { AsyncQueue } from "./async-queue.js";
import { asLlmMessages, nextChatContext, previousTurns } from "./chat-context.js";
import type { ChatRunner, ChatTurn } from "./chat-runner.js";
import { ChatSession, emptyUsage, type NetworkAnswer, type NetworkInput, type SessionServices } from "./chat-session.js";
import type { CodedToolLoader } from "./coded-tools.js";
import { LlmAgent } from "./llm-agent.js";
import { ClientCredentialsTokens } from "./mcp-client/client-credentials.js";
import { McpConnections } from "./mcp-client/mcp-connections.js";
import { takeMcpCredentials } from "./mcp-client/request-credentials.js";
import type { AgentNetwork, AgentSpec } from "./agent-network.js";
import type { AgentRegistry } from "./registry.js";
import type { DeployTemporaryNetworks } from "./temporary-networks.js";
import { filterSlyData } from "./sly-data.js";
import { extractStructure } from "./structure.js";
import { traceAgent } from "../telemetry/genai-spans.js";
import { ANONYMOUS } from "../auth/network-access.js";
import type { ToolCallHolds } from "./tool-call-holds.js";

export interface AgentRuntimeOptions {
  registry: AgentRegistry;
  /**
   * Creates the LLM of a node; throws FAILED_PRECONDITION when its provider has no key. `clientKeys` is the request's
   * `sly_data.llm_config`, for configs that take a key from the client; `llmInfo` the network's model names and classes.
   */
  createLlm: (llmConfig: JsonObject, context?: { clientKeys?: JsonObject; llmInfo?: LlmInfo }) => LlmClient;
  codedTools: CodedToolLoader;
  logger: Logger;
  /** Chats in flight at once; 0 = no limit. */
  maxConcurrentChats: number;
  /** Sends an empty AGENT_PROGRESS when nothing else went out for this long; 0 = never. */
  heartbeatSeconds: number;
  /** Where tool calls wait for an operator; absent, HumanInTheLoopMiddleware refuses the calls it interrupts. */
  holds?: ToolCallHolds;
  /** Where coded tools' Reservationists deploy temporary networks; without it they have none. */
  deployTemporaryNetworks?: DeployTemporaryNetworks;
}

// A network calling `/other` calling `/other`... is bounded like any cycle.
const maxNetworkDepth = 8;

/** Runs StreamingChat turns on real agent networks. Stateless: everything of a turn lives in its session. */
export class AgentRuntime implements ChatRunner {
  private chatsInFlight = 0;
  /** Clients by LLM info (a reload brings a new one) and config. */
  private readonly llms = new WeakMap<LlmInfo, Map<string, LlmClient>>();
  /** OAuth2 tokens for MCP servers, shared by every chat of the process. */
  private readonly mcpTokens = new ClientCredentialsTokens();
  private readonly services: SessionServices;

  constructor(private readonly options: AgentRuntimeOptions) {
    this.services = {
      llmFor: (network, spec, clientKeys) => this.llmFor(network, spec, clientKeys),
      codedTools: options.codedTools,
      activationOf,
      functionOf: (name) => options.registry.get(name) && options.registry.function(name),
      runNetwork: (name, input, parent) => this.runNetwork(name, input, parent),
      ...(options.holds === undefined ? {} : { holds: options.holds }),
      logger: options.logger,
      ...(options.deployTemporaryNetworks === undefined ? {} : { deployTemporaryNetworks: options.deployTemporaryNetworks }),
    };
  }

  async start(turn: ChatTurn): Promise<AsyncIterable<ChatMessage>> {
    const { maxConcurrentChats, heartbeatSeconds } = this.options;
    if (maxConcurrentChats > 0 && this.chatsInFlight >= maxConcurrentChats) {
      throw new AxonError(Code.ResourceExhausted, "TOO_MANY_CHATS", "too many chats in flight. Retry later", {
        metadata: { limit: String(maxConcurrentChats) },
      });
    }
    const { network } = turn;
    // The client's own API keys leave sly_data at once, so that no tool, network, log or answer ever sees them.
    const { llm_config: clientLlmConfig, ...slyData } = turn.slyData;
    const clientKeys = isJsonObject(clientLlmConfig) ? clientLlmConfig : {};
    // Refuse before anything is streamed when a node's LLM cannot be reached for want of a key.
    for (const spec of network.nodes.values()) if (isLlmNode(spec)) this.llmFor(network, spec, clientKeys);

    const deadline = AbortSignal.timeout(network.limits.maxExecutionSeconds * 1000);
    const signal = AbortSignal.any([turn.signal, deadline]);
    const queue = new AsyncQueue<ChatMessage>();
    let lastSent = performance.now();
    const { slyData: withoutHeaders, headers } = takeMcpCredentials(slyData);
    const mcp = new McpConnections((url) => this.options.registry.mcpServer(url), network.limits.maxExecutionSeconds * 1000, {
      requestHeaders: headers,
      tokens: this.mcpTokens,
    });
    const python = this.options.codedTools.python.chat();
    const request = { signal, metadata: turn.metadata, clientId: turn.clientId ?? ANONYMOUS, usage: emptyUsage(), mcp, python };
    const emit = (message: ChatMessage) => {
      lastSent = performance.now();
      queue.push(message);
    };
    const session = new ChatSession(network, structuredClone(withoutHeaders), request, this.services, emit, 0, clientKeys);
    const heartbeat =
      heartbeatSeconds > 0
        ? setInterval(() => {
            if (performance.now() - lastSent >= heartbeatSeconds * 1000) session.emit({ type: MessageType.AGENT_PROGRESS });
          }, (heartbeatSeconds * 1000) / 2)
        : undefined;

    this.chatsInFlight++;
    traceAgent(network.name, () => this.runTurn(session, turn))
      .then(
        () => queue.end(),
        (error: unknown) =>
          queue.fail(
            deadline.aborted && !turn.signal.aborted
              ? new AxonError(Code.DeadlineExceeded, "MAX_EXECUTION_SECONDS", "the chat ran past max_execution_seconds", {
                  metadata: { max_execution_seconds: String(network.limits.maxExecutionSeconds) },
                })
              : error,
          ),
      )
      .finally(() => {
        this.chatsInFlight--;
        clearInterval(heartbeat);
        void mcp.close();
        python.close();
      });
    return queue;
  }

  private async runTurn(session: ChatSession, turn: ChatTurn): Promise<void> {
    const started = performance.now();
    const { frontMan } = session.network;
    const origin = session.originOf([], frontMan.name);
    const history = previousTurns(turn.chatContext, frontMan.name, frontMan.maxMessageHistory);
    const answer = await this.answer(session, origin, turn.text, history);
    const { usage } = session;
    session.emit({
      type: MessageType.AGENT,
      origin,
      structure: {
        total_tokens: usage.totalTokens,
        prompt_tokens: usage.promptTokens,
        completion_tokens: usage.completionTokens,
        successful_requests: usage.successfulRequests,
        total_cost: usage.cost,
        time_taken_in_seconds: (performance.now() - started) / 1000,
      },
    });
    const turns = [...history, { type: MessageType.HUMAN, text: answer.input ?? turn.text }, { type: MessageType.AI, text: answer.text }];
    session.emit({
      type: MessageType.AGENT_FRAMEWORK,
      text: answer.text,
      ...(answer.structure ? { structure: answer.structure } : {}),
      ...(Object.keys(answer.slyData).length > 0 ? { slyData: answer.slyData } : {}),
      chatContext: nextChatContext(origin, turns, frontMan.maxMessageHistory),
    });
  }

  /** The front man's answer to `text`, shaped for whoever asked: structure split off, sly_data per `to_upstream`. */
  private async answer(session: ChatSession, origin: Origin[], text: string, history: ChatMessage[]): Promise<NetworkAnswer & { input?: string }> {
    const { frontMan } = session.network;
    const agent = new LlmAgent(session, frontMan);
    const reply = await agent.converse(origin, asLlmMessages(history), text);
    const shaped = frontMan.structureFormats.includes("json") ? extractStructure(reply) : { text: reply };
    return { ...shaped, slyData: filterSlyData(session.slyData, frontMan.allow?.toUpstream), ...(agent.input === undefined ? {} : { input: agent.input }) };
  }

  private async runNetwork(name: string, input: NetworkInput, parent: ChatSession): Promise<NetworkAnswer> {
    if (parent.depth + 1 >= maxNetworkDepth) throw new Error(`networks nested deeper than ${maxNetworkDepth}`);
    const network = this.options.registry.require(name);
    const session = parent.nested(network, input.slyData, input.forwardMessages);
    return this.answer(session, session.originOf([], network.frontMan.name), input.text, []);
  }

  private llmFor(network: AgentNetwork, spec: AgentSpec, clientKeys: JsonObject): LlmClient {
    const config = mergeLlmConfig(network.llmConfig, spec.llmConfig);
    const llmInfo = this.options.registry.llmInfo(network.name);
    // A client built with the client's key serves that request only: it is never kept.
    if (takesClientKeys(config)) return this.options.createLlm(config, { clientKeys, llmInfo });
    let llms = this.llms.get(llmInfo);
    if (llms === undefined) this.llms.set(llmInfo, (llms = new Map()));
    const key = JSON.stringify(config);
    let llm = llms.get(key);
    if (!llm) {
      llm = this.options.createLlm(config, { llmInfo });
      llms.set(key, llm);
    }
    return llm;
  }
}

function isLlmNode(spec: AgentSpec): boolean {
  return spec.kind === "front_man" || spec.kind === "llm_agent";
}
