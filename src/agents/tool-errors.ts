import type { AgentNetwork } from "./agent-network.js";

/** A failed tool call becomes a result the LLM can read, shaped by the network's `error_formatter`. */
export function toolErrorText(network: AgentNetwork, tool: string, message: string): string {
  return network.errorFormatter === "json" ? JSON.stringify({ error: message, tool }) : `Error: ${tool} failed: ${message}`;
}
