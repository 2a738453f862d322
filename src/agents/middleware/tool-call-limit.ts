import type { LlmMessage, LlmToolCall } from "../../llm/llm.js";
import type { AgentRun, AgentState, Middleware, StateUpdate } from "../middleware-chain.js";
import { integer, oneOf, optional, string, type PrebuiltMiddleware } from "./middleware-args.js";
import { threadCount } from "./thread-counts.js";

type ExitBehavior = "continue" | "error" | "end";

/**
 * LangChain's ToolCallLimitMiddleware: counts the calls the model makes (of one tool, or of all), and the calls past a
 * limit are not run: the model is told so in their results and goes on (`continue`), the run fails (`error`), or ends
 * with the same words (`end`, for a limit on one tool while no other tool's call is waiting).
 */
class ToolCallLimit implements Middleware {
  readonly name: string;
  private runCount = 0;

  constructor(
    private readonly toolName: string | undefined,
    private readonly threadLimit: number | undefined,
    private readonly runLimit: number | undefined,
    private readonly exitBehavior: ExitBehavior,
    private readonly counter: string,
  ) {
    this.name = toolName === undefined ? "ToolCallLimitMiddleware" : `ToolCallLimitMiddleware[${toolName}]`;
  }

  beforeAgent = async (): Promise<undefined> => {
    this.runCount = 0;
    return undefined;
  };

  afterModel = async (state: AgentState, run: AgentRun): Promise<StateUpdate | undefined> => {
    const answer = state.messages.at(-1);
    if (answer?.role !== "assistant" || answer.toolCalls === undefined) return undefined;
    const thread = threadCount(run, this.counter);
    const blocked: LlmToolCall[] = [];
    for (const call of answer.toolCalls) {
      if (this.toolName !== undefined && call.name !== this.toolName) continue;
      const over = (this.threadLimit !== undefined && thread.get() >= this.threadLimit) || (this.runLimit !== undefined && this.runCount >= this.runLimit);
      if (over) blocked.push(call);
      else {
        thread.add(1);
        this.runCount++;
      }
    }
    if (blocked.length === 0) return undefined;
    const message = this.limitMessage(thread.get());
    if (this.exitBehavior === "error") throw Object.assign(new Error(message), { name: "ToolCallLimitExceededError" });
    const results: LlmMessage[] = blocked.map((call) => ({ role: "tool", toolCallId: call.id, content: message }));
    if (this.exitBehavior === "continue") return { messages: [...state.messages, ...results] };
    const others = answer.toolCalls.filter((call) => !blocked.includes(call));
    if (others.length > 0) throw new Error(`${this.name} cannot end the run while other tool calls (${others.map((call) => call.name).join(", ")}) are waiting`);
    return { messages: [...state.messages, ...results, { role: "assistant", content: message }], jumpTo: "end" };
  };

  private limitMessage(thread: number): string {
    const which = [
      ...(this.threadLimit !== undefined && thread >= this.threadLimit ? [`thread limit (${this.threadLimit} calls)`] : []),
      ...(this.runLimit !== undefined && this.runCount >= this.runLimit ? [`run limit (${this.runLimit} calls)`] : []),
    ].join(" and ");
    const tool = this.toolName === undefined ? "Tool" : `The '${this.toolName}' tool`;
    return `${tool} call limit reached: ${which}. This call was not run; do not make it again.`;
  }
}

export const toolCallLimitMiddleware: PrebuiltMiddleware = {
  args: { tool_name: optional(string), thread_limit: optional(integer(0)), run_limit: optional(integer(0)), exit_behavior: oneOf("continue", "error", "end") },
  check: (args) => ((args["thread_limit"] ?? null) === null && (args["run_limit"] ?? null) === null ? [{ key: "", reason: "ToolCallLimitMiddleware needs thread_limit or run_limit" }] : []),
  make: (args, _agent, index) =>
    new ToolCallLimit(
      (args["tool_name"] as string | null | undefined) ?? undefined,
      (args["thread_limit"] as number | null | undefined) ?? undefined,
      (args["run_limit"] as number | null | undefined) ?? undefined,
      (args["exit_behavior"] as ExitBehavior | undefined) ?? "continue",
      `middleware[${index}]`,
    ),
};
