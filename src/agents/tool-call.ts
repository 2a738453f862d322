import type { JsonObject } from "@bufbuild/protobuf";
import type { Origin } from "../gen/neuro_san/api/grpc/chat_pb.js";
import type { LlmTool } from "../llm/llm.js";
import type { AgentSpec } from "./agent-network.js";

/** Who is calling a node: its origin (the callee's parent) and spec (whose `allow` policy applies). */
export interface Caller {
  origin: Origin[];
  spec: AgentSpec;
}

export interface ToolCall {
  caller: Caller;
  /** The callee's own origin: the caller's plus this activation. */
  origin: Origin[];
}

/** One call of a node as a tool: arguments in, the tool result text out. */
export interface Activation {
  invoke(args: JsonObject, call: ToolCall): Promise<string>;
}

/** A tool as one LLM conversation offers it: the name the LLM calls it by, the name its origin carries, what runs it. */
export interface OfferedTool extends LlmTool {
  /** The HOCON name of a node; the offered name of an MCP server's tool. */
  originName: string;
  activation: Activation;
}
