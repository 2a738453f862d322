import { create, type JsonObject, type MessageInitShape } from "@bufbuild/protobuf";
import type { Logger } from "../logger.js";
import type { LlmClient, LlmUsage } from "../llm/llm.js";
import { ChatMessageSchema, OriginSchema, type ChatMessage, type Origin } from "../gen/neuro_san/api/grpc/chat_pb.js";
import type { CodedToolLoader } from "./coded-tools.js";
import type { McpConnections } from "./mcp-client/mcp-connections.js";
import type { PythonChat } from "./python/python-pool.js";
import type { DeployTemporaryNetworks } from "./temporary-networks.js";
import type { Activation } from "./tool-call.js";
import type { ToolCallHolds } from "./tool-call-holds.js";
import type { AgentFunction, AgentNetwork, AgentSpec } from "./agent-network.js";

export type MessageInit = MessageInitShape<typeof ChatMessageSchema>;

/** Token accounting of a whole request, nested networks included. */
export interface Usage extends LlmUsage {
  successfulRequests: number;
}

/** What a session needs from the process: LLMs, coded tools, what runs a node, other networks. */
export interface SessionServices {
  /** `clientKeys`: the session's `sly_data.llm_config`, for networks that run on the client's own API keys. */
  llmFor(network: AgentNetwork, spec: AgentSpec, clientKeys: JsonObject): LlmClient;
  codedTools: CodedToolLoader;
  /** What runs a node called as a tool (activation.ts), for the nodes that call nodes of their own. */
  activationOf(session: ChatSession, spec: AgentSpec): Activation;
  /** The front man's function block of another network of this server, to describe `/name` to an LLM. */
  functionOf(network: string): AgentFunction | undefined;
  /** Runs another network of this server for an external node `/name`. */
  runNetwork(name: string, input: NetworkInput, parent: ChatSession): Promise<NetworkAnswer>;
  /** Where tool calls wait for an operator (HumanInTheLoopMiddleware); absent, such calls are refused. */
  holds?: ToolCallHolds;
  logger: Logger;
  /** Where a coded tool's Reservationist deploys temporary networks, where this process has them. */
  deployTemporaryNetworks?: DeployTemporaryNetworks;
}

/** What every session of one request shares, nested networks included. */
export interface RequestScope {
  /** Aborted when the chat is cancelled or runs past its deadline. */
  signal: AbortSignal;
  /** Forwarded request metadata (request_id, user_id, ...). */
  metadata: Record<string, string>;
  /** The client the chat is for (`anonymous` when the transport does not know it). */
  clientId: string;
  usage: Usage;
  /** The MCP servers the request's agents use; closed when it ends. */
  mcp: McpConnections;
  /** The request's Python coded tool calls, on one worker; ended with the request. */
  python: PythonChat;
}

export interface NetworkInput {
  text: string;
  slyData: JsonObject;
  /** The caller's `allow.from_downstream.messages` lets the called network's messages through to this chat's client. */
  forwardMessages?: boolean;
}

export interface NetworkAnswer {
  text: string;
  structure?: JsonObject;
  /** Already filtered by the network's `to_upstream` policy. */
  slyData: JsonObject;
}

/**
 * The state of one request through one network: its sly_data (shared by the nodes, read and written by
 * coded tools), instantiation counters, and where its messages go. Nothing outlives the request.
 */
export class ChatSession {
  private readonly instantiations = new Map<string, number>();

  constructor(
    readonly network: AgentNetwork,
    public slyData: JsonObject,
    readonly request: RequestScope,
    readonly services: SessionServices,
    private readonly sink: (message: ChatMessage) => void,
    /** How many networks deep this session runs (a network calling `/other` nests one level). */
    readonly depth = 0,
    /**
     * The request's `sly_data.llm_config`, taken out of its sly_data: API keys the client pays with. Only the network
     * the client called uses them; they never reach a tool, another network, a log or the answer.
     */
    readonly clientKeys: JsonObject = {},
  ) {}

  get signal(): AbortSignal {
    return this.request.signal;
  }

  get metadata(): Record<string, string> {
    return this.request.metadata;
  }

  get usage(): Usage {
    return this.request.usage;
  }

  get mcp(): McpConnections {
    return this.request.mcp;
  }

  /** The origin of a new activation of `tool` under `parent`; indexes count per request and name, from 1. */
  originOf(parent: Origin[], tool: string): Origin[] {
    const index = (this.instantiations.get(tool) ?? 0) + 1;
    this.instantiations.set(tool, index);
    return [...parent, create(OriginSchema, { tool, instantiationIndex: index })];
  }

  emit(message: MessageInit): void {
    this.sink(create(ChatMessageSchema, message));
  }

  addUsage(usage: LlmUsage): void {
    this.usage.promptTokens += usage.promptTokens;
    this.usage.completionTokens += usage.completionTokens;
    this.usage.totalTokens += usage.totalTokens;
    this.usage.cost += usage.cost;
    this.usage.successfulRequests += 1;
  }

  /**
   * This session over another sly_data dict, and cancelled by `signal` too: what a tool that calls a node of its own
   * network (neuro-san's `use_tool`) runs that node in. Origins, counters, messages and the request stay this session's.
   */
  forToolUse(slyData: JsonObject, signal: AbortSignal): ChatSession {
    const view = Object.create(this) as ChatSession & { request: RequestScope };
    view.slyData = slyData;
    view.request = { ...this.request, signal: AbortSignal.any([this.request.signal, signal]) };
    return view;
  }

  /**
   * A nested session for another network of this server: its own sly_data and counters, same request. Its messages
   * reach this chat's client only when `forwardMessages` says so.
   */
  nested(network: AgentNetwork, slyData: JsonObject, forwardMessages = false): ChatSession {
    return new ChatSession(network, slyData, this.request, this.services, forwardMessages ? this.sink : () => {}, this.depth + 1);
  }
}

export function emptyUsage(): Usage {
  return { promptTokens: 0, completionTokens: 0, totalTokens: 0, cost: 0, successfulRequests: 0 };
}
