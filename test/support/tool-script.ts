import type { JsonObject } from "@bufbuild/protobuf";
import { defaultReply, type Reply, type ScriptedRequest, type ScriptHandler } from "./scripted-llm/scripted-llm.js";

/**
 * A script for the scripted LLM: on the user's message it calls the tool `pick` names, when that tool is offered; at
 * every other turn (tool results back) it answers as `defaultReply` does.
 */
export function callingFirst(pick: (request: ScriptedRequest) => { name: string; arguments?: JsonObject } | undefined): ScriptHandler {
  return (request): Reply => {
    const call = request.messages.at(-1)?.role === "user" ? pick(request) : undefined;
    const offered = call !== undefined && request.tools.some((tool) => tool.name === call.name);
    return offered ? { toolCalls: [{ name: call.name, arguments: call.arguments ?? {} }] } : defaultReply(request);
  };
}

/** The front man calls the tool the user's message names, then answers with its result. */
export const callingTheNamedTool = callingFirst((request) => {
  const last = request.messages.at(-1);
  return last?.role === "user" ? { name: last.content } : undefined;
});
