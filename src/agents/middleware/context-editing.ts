import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { isJsonObject } from "../../json.js";
import type { LlmMessage, LlmResponse } from "../../llm/llm.js";
import type { Middleware, ModelHandler, ModelRequest } from "../middleware-chain.js";
import { argumentProblems, boolean, integer, oneOf, string, stringList, type ArgumentProblem, type ArgumentRule, type PrebuiltMiddleware } from "./middleware-args.js";
import { approximateTokens } from "./token-count.js";

interface ClearToolUses {
  trigger: number;
  clearAtLeast: number;
  keep: number;
  clearToolInputs: boolean;
  excludeTools: string[];
  placeholder: string;
}

/** ClearToolUsesEdit's arguments, as LangChain's constructor takes them. */
const clearToolUsesEdit: PrebuiltMiddleware = {
  args: { trigger: integer(0), clear_at_least: integer(0), keep: integer(0), clear_tool_inputs: boolean, exclude_tools: stringList, placeholder: string },
  make: () => {
    throw new Error("an edit, not a middleware");
  },
};

const EDIT_CLASSES = ["langchain.agents.middleware.ClearToolUsesEdit", "langchain.agents.middleware.context_editing.ClearToolUsesEdit"];

/** `edits`: a list of `{class, args}` edits, each made as neuro-san makes an argument written with a class. */
const edits: ArgumentRule = {
  check: (value) => (Array.isArray(value) && value.every((edit) => isJsonObject(edit)) ? undefined : "must be a list of {class, args} edits"),
};

function editProblems(list: JsonValue[]): ArgumentProblem[] {
  return list.flatMap((edit, index) => {
    const { class: className, args = {} } = edit as JsonObject;
    if (typeof className !== "string" || !EDIT_CLASSES.includes(className)) {
      return [{ key: `edits[${index}].class`, reason: `must be ${EDIT_CLASSES[0]}, the edit Axon implements` }];
    }
    if (!isJsonObject(args)) return [{ key: `edits[${index}].args`, reason: "must be an object" }];
    return argumentProblems("ClearToolUsesEdit", clearToolUsesEdit, args).map((problem) => ({ ...problem, key: `edits[${index}].args.${problem.key}` }));
  });
}

function clearToolUsesOf(args: JsonObject): ClearToolUses {
  return {
    trigger: (args["trigger"] as number | undefined) ?? 100_000,
    clearAtLeast: (args["clear_at_least"] as number | undefined) ?? 0,
    keep: (args["keep"] as number | undefined) ?? 3,
    clearToolInputs: (args["clear_tool_inputs"] as boolean | undefined) ?? false,
    excludeTools: (args["exclude_tools"] as string[] | undefined) ?? [],
    placeholder: (args["placeholder"] as string | undefined) ?? "[cleared]",
  };
}

/**
 * One ClearToolUsesEdit: past `trigger` tokens, the oldest tool results (all but the last `keep`, and not those of
 * `exclude_tools`) give their place to `placeholder` until `clear_at_least` tokens are reclaimed (all of them, at 0);
 * `clear_tool_inputs` also empties the arguments of the calls they answer.
 */
function cleared(messages: LlmMessage[], edit: ClearToolUses): LlmMessage[] {
  if (approximateTokens(messages) <= edit.trigger) return messages;
  const result = [...messages];
  const results = result.flatMap((message, index) => (message.role === "tool" ? [index] : []));
  const candidates = edit.keep === 0 ? results : results.slice(0, -edit.keep);
  let reclaimed = 0;
  for (const index of candidates) {
    if (edit.clearAtLeast > 0 && reclaimed >= edit.clearAtLeast) break;
    const message = result[index] as Extract<LlmMessage, { role: "tool" }>;
    if (message.content === edit.placeholder) continue;
    const callerIndex = result.findLastIndex((candidate, at) => at < index && candidate.role === "assistant" && (candidate.toolCalls ?? []).some((call) => call.id === message.toolCallId));
    const caller = result[callerIndex] as Extract<LlmMessage, { role: "assistant" }> | undefined;
    const call = caller?.toolCalls?.find((each) => each.id === message.toolCallId);
    if (call !== undefined && edit.excludeTools.includes(call.name)) continue;
    reclaimed += approximateTokens([message]) - approximateTokens([{ ...message, content: edit.placeholder }]);
    result[index] = { ...message, content: edit.placeholder };
    if (edit.clearToolInputs && caller !== undefined && call !== undefined) {
      result[callerIndex] = { ...caller, toolCalls: caller.toolCalls!.map((each) => (each.id === call.id ? { ...each, arguments: {} } : each)) };
    }
  }
  return result;
}

/** LangChain's ContextEditingMiddleware: the edits shorten what the model is sent; the agent's state keeps it all. */
class ContextEditing implements Middleware {
  readonly name = "ContextEditingMiddleware";

  constructor(private readonly edits: ClearToolUses[]) {}

  wrapModelCall(request: ModelRequest, handler: ModelHandler): Promise<LlmResponse> {
    const messages = this.edits.reduce(cleared, request.messages);
    return handler(messages === request.messages ? request : { ...request, messages });
  }
}

export const contextEditingMiddleware: PrebuiltMiddleware = {
  // `model` counts with the model's own tokenizer in LangChain; Axon counts approximately either way.
  args: { edits, token_count_method: oneOf("approximate", "model") },
  check: (args) => (Array.isArray(args["edits"]) ? editProblems(args["edits"]) : []),
  make: (args) => new ContextEditing(Array.isArray(args["edits"]) ? args["edits"].map((edit) => clearToolUsesOf(((edit as JsonObject)["args"] as JsonObject | undefined) ?? {})) : [clearToolUsesOf({})]),
};
