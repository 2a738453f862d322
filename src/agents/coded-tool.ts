import type { JsonObject } from "@bufbuild/protobuf";

/** What a coded tool gets besides its arguments and the request's sly_data. */
export interface CodedToolContext {
  /** Streams an AGENT_PROGRESS message with this structure. */
  reportProgress(structure: JsonObject): void;
  /** Forwarded request metadata (request_id, user_id, ...). */
  metadata: Record<string, string>;
  /** Aborted when the chat is cancelled: long work should stop. */
  signal: AbortSignal;
}

/** A coded tool class: `asyncInvoke` is preferred; `invoke` may also return a promise. */
export interface CodedTool {
  asyncInvoke?(args: JsonObject, slyData: JsonObject, context: CodedToolContext): unknown;
  invoke?(args: JsonObject, slyData: JsonObject): unknown;
}
