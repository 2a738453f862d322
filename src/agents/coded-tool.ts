import type { JsonObject } from "@bufbuild/protobuf";

/** What a coded tool gets besides its arguments and the request's sly_data. */
export interface CodedToolContext {
  /** Streams an AGENT_PROGRESS message with this structure. */
  reportProgress(structure: JsonObject): void;
  /** Forwarded request metadata (request_id, user_id, ...). */
  metadata: Record<string, string>;
  /** Aborted when the chat is cancelled: long work should stop. */
  signal: AbortSignal;
  /**
   * Runs a tool of the network by name (an agent, a coded tool, `/network` or a URL, an MCP server's tool) with these
   * arguments over this sly_data (the request's by default), as the LLM would call it; resolves with its answer text.
   * neuro-san's `BranchActivation.use_tool`.
   */
  useTool(toolName: string, args?: JsonObject, slyData?: JsonObject): Promise<string>;
}

/** A coded tool class: `asyncInvoke` is preferred; `invoke` may also return a promise. */
export interface CodedTool {
  asyncInvoke?(args: JsonObject, slyData: JsonObject, context: CodedToolContext): unknown;
  invoke?(args: JsonObject, slyData: JsonObject): unknown;
}
