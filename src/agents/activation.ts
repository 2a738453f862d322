import type { AgentSpec } from "./agent-network.js";
import type { ChatSession } from "./chat-session.js";
import { CodedToolActivation } from "./coded-tool-activation.js";
import { ExternalAgentActivation } from "./external-agent.js";
import { LlmAgentActivation } from "./llm-agent.js";
import type { Activation } from "./tool-call.js";
import { LibraryToolActivation } from "./toolbox/library-tool-activation.js";

/**
 * The one place that decides which kind of node a spec describes and what runs it. It stands above the kinds: one that
 * calls nodes of its own (an LLM agent its tools) reaches it through its session's services.
 */
export function activationOf(session: ChatSession, spec: AgentSpec): Activation {
  switch (spec.kind) {
    case "coded_tool":
      return new CodedToolActivation(session, spec);
    case "library_tool":
      return new LibraryToolActivation(session, spec);
    case "external_agent":
      return new ExternalAgentActivation(session, spec);
    case "llm_agent":
    case "front_man":
      return new LlmAgentActivation(session, spec);
    case "mcp_server":
      // Its tools are what an LLM calls (see LlmAgent), never the server itself.
      throw new Error(`the MCP server ${spec.name} is not a tool`);
  }
}
