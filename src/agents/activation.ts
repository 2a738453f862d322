import type { JsonObject } from "@bufbuild/protobuf";
import { ChatMessage_ChatMessageType as MessageType, type Origin } from "../gen/neuro_san/api/grpc/chat_pb.js";
import type { ChatSession } from "./chat-session.js";
import { CodedToolActivation } from "./coded-tools.js";
import { ExternalAgentActivation } from "./external-agent.js";
import { LlmAgentActivation } from "./llm-agent.js";
import type { AgentSpec } from "./network.js";
import { LibraryToolActivation } from "./toolbox/library-tool-activation.js";

/** Who is calling a node: its origin (the callee's parent) and spec (whose `allow` policy applies). */
export interface Caller {
  origin: Origin[];
  spec: AgentSpec;
}

/** One call of a node as a tool: arguments in, the tool result text out. */
export interface Activation {
  invoke(args: JsonObject, call: ToolCall): Promise<string>;
}

export interface ToolCall {
  caller: Caller;
  /** The callee's own origin: the caller's plus this activation. */
  origin: Origin[];
}

/** The one place that decides which kind of node a spec describes and what runs it. */
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

/** A tool run as MAXIMAL shows it: an AGENT note with its arguments, then one with its output, under its own origin. */
export async function runReported(session: ChatSession, origin: Origin[], args: JsonObject, run: () => Promise<string>): Promise<string> {
  session.emit({ type: MessageType.AGENT, origin, structure: { tool_start: true, tool_args: args } });
  const text = await run();
  session.emit({ type: MessageType.AGENT, origin, structure: { tool_end: true, tool_output: text } });
  return text;
}
