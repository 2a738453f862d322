import type { AgentFunction, AgentNetwork, AgentSpec } from "./agent-network.js";
import { argsToolsOf } from "./network.js";

/** One node as Connectivity reports it. */
export interface ConnectivityEntry {
  /** The node's HOCON name, or an external node's reference as written. */
  origin: string;
  /** `tools` then `args.tools`, deduplicated, in order; empty for external nodes and behind `allow.connectivity: false`. */
  tools: string[];
  displayAs: string;
}

/** One public network as List reports it. */
export interface AgentListing {
  agentName: string;
  description: string;
  tags: string[];
}

/**
 * Every node reachable from the front man: the front man first, then depth-first in `tools` order, each node once
 * (cycles are allowed in networks). A node with `allow.connectivity: false` still appears, but its tools are hidden
 * and nothing is reached through them.
 */
export function connectivityOf(network: AgentNetwork): ConnectivityEntry[] {
  const entries: ConnectivityEntry[] = [];
  const visited = new Set<string>();
  const visit = (node: AgentSpec): void => {
    if (visited.has(node.name)) return;
    visited.add(node.name);
    const tools = visibleToolsOf(node);
    entries.push({ origin: node.name, tools, displayAs: node.displayAs });
    for (const tool of tools) {
      const downstream = network.nodes.get(tool);
      if (downstream !== undefined) visit(downstream);
    }
  };
  visit(network.frontMan);
  return entries;
}

function visibleToolsOf(node: AgentSpec): string[] {
  if (node.kind === "external_agent" || node.allow?.connectivity === false) return [];
  return [...new Set([...node.tools, ...argsToolsOf(node)])];
}

/** The front man's `function` block; an empty object when it has none (Function then answers an empty message). */
export function functionOf(network: AgentNetwork): AgentFunction {
  return network.frontMan.function ?? {};
}

export function listingOf(network: AgentNetwork): AgentListing {
  return { agentName: network.name, description: network.description, tags: [...network.tags] };
}
