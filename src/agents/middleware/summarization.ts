import type { JsonValue } from "@bufbuild/protobuf";
import type { LlmMessage } from "../../llm/llm.js";
import type { AgentRun, AgentState, Middleware, StateUpdate } from "../middleware-chain.js";
import { integer, required, string, type ArgumentRule, type PrebuiltMiddleware } from "./middleware-args.js";
import { approximateTokens } from "./token-count.js";

type ContextSize = ["tokens" | "messages", number];

const defaultPrompt = [
  "Summarize the conversation below for the assistant that continues it. Keep what it needs to go on: the user's goals,",
  "facts and decisions established, tool results that still matter, and what remains to be done. Answer with the summary only.",
  "",
  "{messages}",
].join("\n");

const SUMMARY_PREFIX = "Here is a summary of the conversation to date:\n\n";

/**
 * LangChain's SummarizationMiddleware: before a model call, once the conversation reaches a `trigger` (tokens or
 * messages; any of several), the messages before the last `keep` are summarized by `model` and replaced by the
 * summary. A tool call and its results are never split.
 */
class Summarization implements Middleware {
  readonly name = "SummarizationMiddleware";

  constructor(
    private readonly model: string,
    private readonly triggers: ContextSize[],
    private readonly keep: ContextSize,
    private readonly prompt: string,
    private readonly trimTokens: number,
  ) {}

  beforeModel = async (state: AgentState, run: AgentRun): Promise<StateUpdate | undefined> => {
    const { messages } = state;
    const tokens = approximateTokens(messages);
    if (!this.triggers.some(([kind, at]) => (kind === "tokens" ? tokens >= at : messages.length >= at))) return undefined;
    const cutoff = safeCutoff(messages, this.keptFrom(messages));
    if (cutoff <= 0) return undefined;
    const older = trimmed(messages.slice(0, cutoff), this.trimTokens);
    const llm = run.modelFor(this.model);
    const summary = await llm.complete({
      messages: [{ role: "user", content: this.prompt.replace("{messages}", older.map(asLine).join("\n")) }],
      tools: [],
      signal: run.session.signal,
    });
    run.session.addUsage(summary.usage);
    return { messages: [{ role: "user", content: `${SUMMARY_PREFIX}${summary.text}` }, ...messages.slice(cutoff)] };
  };

  /** Where the kept messages start. */
  private keptFrom(messages: LlmMessage[]): number {
    const [kind, size] = this.keep;
    if (kind === "messages") return Math.max(0, messages.length - size);
    let from = messages.length;
    while (from > 0 && approximateTokens(messages.slice(from - 1)) <= size) from--;
    return from;
  }
}

/** Moves the cut back so that it never falls between a model's tool calls and their results. */
function safeCutoff(messages: LlmMessage[], cutoff: number): number {
  let at = cutoff;
  while (at > 0 && messages[at]?.role === "tool") at--;
  return at;
}

/** The newest messages that fit in `tokens`. */
function trimmed(messages: LlmMessage[], tokens: number): LlmMessage[] {
  let from = messages.length;
  while (from > 0 && approximateTokens(messages.slice(from - 1)) <= tokens) from--;
  return messages.slice(from);
}

function asLine(message: LlmMessage): string {
  const calls = message.role === "assistant" && message.toolCalls !== undefined ? ` [calls ${message.toolCalls.map((call) => `${call.name}(${JSON.stringify(call.arguments)})`).join(", ")}]` : "";
  return `${message.role}: ${message.content}${calls}`;
}

const sizeKinds = ["tokens", "messages"];

function contextSizeProblem(value: JsonValue): string | undefined {
  if (!Array.isArray(value) || value.length !== 2 || typeof value[1] !== "number" || value[1] < 0) return "must be [kind, number] with kind tokens, messages or fraction";
  if (value[0] === "fraction") return "is a fraction of the model's context size, which Axon does not know: give tokens or messages";
  return sizeKinds.includes(value[0] as string) ? undefined : "must be [kind, number] with kind tokens, messages or fraction";
}

const contextSize: ArgumentRule = { check: contextSizeProblem };
const triggers: ArgumentRule = {
  check: (value) => (Array.isArray(value) && Array.isArray(value[0]) ? value.map(contextSizeProblem).find((problem) => problem !== undefined) : value === null ? undefined : contextSizeProblem(value)),
};

export const summarizationMiddleware: PrebuiltMiddleware = {
  args: {
    model: required(string),
    trigger: triggers,
    keep: contextSize,
    summary_prompt: string,
    trim_tokens_to_summarize: integer(1),
    // LangChain's older names: trigger ["tokens", n] and keep ["messages", n].
    max_tokens_before_summary: integer(1),
    messages_to_keep: integer(0),
    summary_prefix: string,
  },
  unsupported: { token_counter: "a Python callable" },
  make: (args) => {
    const trigger = args["trigger"] ?? (args["max_tokens_before_summary"] === undefined ? null : ["tokens", args["max_tokens_before_summary"]]);
    const list = trigger === null ? [] : Array.isArray((trigger as JsonValue[])[0]) ? (trigger as ContextSize[]) : [trigger as ContextSize];
    const keep = (args["keep"] as ContextSize | undefined) ?? ["messages", (args["messages_to_keep"] as number | undefined) ?? 20];
    const prompt = (args["summary_prompt"] as string | undefined) ?? defaultPrompt;
    return new Summarization(args["model"] as string, list, keep, prompt, (args["trim_tokens_to_summarize"] as number | undefined) ?? 4000);
  },
};
