import type { JsonObject } from "@bufbuild/protobuf";
import type { LlmMessage } from "../../../src/llm/llm.js";

/** What a scripted model answers: text, tool calls, or both. */
export interface Reply {
  text?: string;
  /** `arguments` as a string is sent verbatim: the way to script malformed JSON. */
  toolCalls?: { name: string; arguments: JsonObject | string }[];
  /** Defaults to a deterministic estimate (about 4 characters a token). */
  usage?: { promptTokens: number; completionTokens: number };
  /** The model the answer says it came from, as providers name a snapshot of the one asked for; default the one asked for. */
  model?: string;
}

/** A request as the script sees it, the same for both wire formats. */
export interface ScriptedRequest {
  model: string;
  system?: string;
  /** Normalized to Axon's own message shape; system messages are in `system`. */
  messages: LlmMessage[];
  tools: { name: string; description: string; parameters: JsonObject }[];
  stream: boolean;
}

export type ScriptHandler = (request: ScriptedRequest) => Reply | Promise<Reply>;

/**
 * The default script, deterministic and good enough for the example networks:
 * - the conversation ends with tool results -> text `Answer: <result>; <result>` (the results of that round, in order);
 * - it ends with a user message and tools are offered -> one call of the FIRST tool, arguments made from its schema:
 *   strings get the user's text, numbers and integers take the numbers found in the text in order (1 when none
 *   are left), booleans `true`, enums their first value, arrays one such item, objects recurse;
 * - otherwise -> text `Answer: <last user text>`.
 */
export function defaultReply(request: ScriptedRequest): Reply {
  const results: string[] = [];
  for (let index = request.messages.length - 1; index >= 0; index--) {
    const message = request.messages[index];
    if (message?.role !== "tool") break;
    results.unshift(message.content);
  }
  if (results.length > 0) return { text: `Answer: ${results.join("; ")}` };
  const last = request.messages.at(-1);
  const userText = last?.role === "user" ? last.content : "";
  const tool = request.tools[0];
  if (tool !== undefined && last?.role === "user") {
    const numbers = (userText.match(/-?\d+(?:\.\d+)?/g) ?? []).map(Number);
    return { toolCalls: [{ name: tool.name, arguments: argumentsFor(tool.parameters, userText, numbers) }] };
  }
  return { text: `Answer: ${userText}` };
}

function argumentsFor(schema: JsonObject, text: string, numbers: number[]): JsonObject {
  const properties = schema["properties"];
  if (typeof properties !== "object" || properties === null || Array.isArray(properties)) return {};
  const result: JsonObject = {};
  for (const [name, property] of Object.entries(properties)) {
    if (typeof property === "object" && property !== null && !Array.isArray(property)) {
      result[name] = valueFor(property, text, numbers);
    }
  }
  return result;
}

function valueFor(schema: JsonObject, text: string, numbers: number[]): JsonObject[string] {
  const choices = schema["enum"];
  if (Array.isArray(choices) && choices.length > 0) return choices[0] ?? null;
  switch (schema["type"]) {
    case "number":
    case "float":
      return numbers.shift() ?? 1;
    case "integer":
    case "int":
      return Math.trunc(numbers.shift() ?? 1);
    case "boolean":
    case "bool":
      return true;
    case "array": {
      const items = schema["items"];
      const isSchema = typeof items === "object" && items !== null && !Array.isArray(items);
      return isSchema ? [valueFor(items, text, numbers)] : [];
    }
    case "object":
      return argumentsFor(schema, text, numbers);
    default:
      return text;
  }
}

/** Usage a reply reports when the script gives none. */
export function estimatedUsage(request: ScriptedRequest, reply: Reply): { promptTokens: number; completionTokens: number } {
  const tokens = (value: unknown) => Math.max(1, Math.ceil(JSON.stringify(value).length / 4));
  return reply.usage ?? { promptTokens: tokens(request.messages), completionTokens: tokens([reply.text, reply.toolCalls]) };
}

export function argumentsText(toolCall: { arguments: JsonObject | string }): string {
  return typeof toolCall.arguments === "string" ? toolCall.arguments : JSON.stringify(toolCall.arguments);
}

/** Text split at word ends, so streamed replies arrive in several deltas. */
export function pieces(text: string): string[] {
  return text.match(/\S+\s*|\s+/g) ?? [];
}

/** A string in two halves (the second may be empty): streamed tool arguments arrive in fragments. */
export function halves(text: string): string[] {
  const middle = Math.ceil(text.length / 2);
  return [text.slice(0, middle), text.slice(middle)].filter((piece) => piece !== "");
}
