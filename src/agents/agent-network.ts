import type { JsonObject } from "./hocon.js";
import type { RegistryProblem } from "./problem.js";

/*
 * An agent network as Axon runs it: what network.ts builds from a HOCON file, and what the registry, the node kinds
 * and the transports read. Types only, so that every one of them may import it.
 */

/** What a node of a network is; decided in `nodeKindOf` and nowhere else. */
export type NodeKind = "front_man" | "llm_agent" | "coded_tool" | "library_tool" | "external_agent" | "mcp_server";

export interface AgentFunction {
  description?: string;
  parameters?: JsonObject;
  slyDataSchema?: JsonObject;
  slyDataOutputSchema?: JsonObject;
}

/** One direction of the sly_data policy: everything, a list of keys, or key -> allowed | denied | new name. */
export type SlyDataGrant = boolean | string[] | Record<string, boolean | string>;

export interface AllowPolicy {
  toDownstream?: SlyDataGrant;
  fromDownstream?: SlyDataGrant;
  /** `from_downstream.messages`: the external agents (as the tools list names them) whose messages reach the client; true = all. */
  messagesFrom?: true | string[];
  toUpstream?: SlyDataGrant;
  /** `allow.connectivity: false` hides the node's tools in Connectivity. */
  connectivity: boolean;
}

export interface McpServerReference {
  url: string;
  allowedTools?: string[];
}

/** Where an external node's calls go: another network on this server (`/name`) or on another server (a URL). */
export type ExternalTarget =
  | { kind: "same_server"; network: string }
  | { kind: "other_server"; url: string; network: string };

export interface AgentSpec {
  /** The HOCON `name`; for an external node the reference exactly as written (`/net` or the URL). */
  name: string;
  kind: NodeKind;
  /** Where the spec sits in its file, e.g. `tools[2]`; absent for external nodes. */
  keyPath?: string;
  function?: AgentFunction;
  instructions?: string;
  command?: string;
  /** Downstream references as written in `tools` (an MCP server's URL for a `{url, tools}` entry). */
  tools: string[];
  /** The MCP servers among `tools`, with the server tools this agent may use (all when absent). */
  mcpServers?: McpServerReference[];
  /** Coded tool class, `module.ClassName`; a library tool's class (a LangChain class name). */
  className?: string;
  /** The toolbox tool this spec names (`"toolbox": "<name>"`). */
  toolbox?: string;
  args?: JsonObject;
  /** Overlay on the network's `llm_config`. */
  llmConfig?: JsonObject;
  allow?: AllowPolicy;
  /** `display_as`, defaulted by kind. */
  displayAs: string;
  maxMessageHistory?: number;
  /** `"json"` and `["json"]` both become `["json"]`. */
  structureFormats: string[];
  external?: ExternalTarget;
  /** `middleware`, in order: what wraps this agent's runs (see middleware-chain.ts). */
  middleware: MiddlewareSpec[];
  /** The agent's own `max_steps` / `max_attempts`, over the network's. */
  limits?: Partial<Pick<NetworkLimits, "maxSteps" | "maxAttempts">>;
  /** The spec after commondefs replacement. */
  raw: JsonObject;
}

/** One `middleware` entry: a LangChain AgentMiddleware class and its constructor's keyword arguments. */
export interface MiddlewareSpec {
  className: string;
  args: JsonObject;
  /** `allow.reservations`: the class may be given neuro-san's `reservationist` special arg. */
  allowReservations: boolean;
  /** Where it sits in its file, e.g. `tools[0].middleware[1]`. */
  keyPath: string;
}

export interface NetworkLimits {
  /** `max_steps` (`max_iterations` its older name): the model calls and tool rounds one agent run may take. */
  maxSteps: number;
  /** `max_attempts`: how many times an agent run is tried when it fails for a reason that may pass. */
  maxAttempts: number;
  maxExecutionSeconds: number;
}

export interface AgentNetwork {
  name: string;
  file: string;
  public: boolean;
  /** Offered as a tool by Axon's MCP server. */
  mcp: boolean;
  metadata: JsonObject;
  description: string;
  tags: string[];
  frontMan: AgentSpec;
  /** Defined specs in file order, then external nodes in the order first referenced. */
  nodes: ReadonlyMap<string, AgentSpec>;
  /** The network default; a spec's `llmConfig` overlays it. */
  llmConfig: JsonObject;
  limits: NetworkLimits;
  errorFormatter?: "string" | "json";
  errorFragments: string[];
  verbose?: boolean | string;
  llmInfoFile?: string;
  /** The whole file after includes, substitutions and commondefs. */
  raw: JsonObject;
  /** What is wrong but leaves the network served (reported and logged at load). */
  warnings: RegistryProblem[];
}
