import type { AgentRun, AgentState, Middleware, StateUpdate } from "../middleware-chain.js";
import { integer, oneOf, optional, type PrebuiltMiddleware } from "./middleware-args.js";
import { threadCount } from "./thread-counts.js";

/**
 * LangChain's ModelCallLimitMiddleware: before each model call, a run (or the agent's thread) that has made its limit
 * of calls ends with a message saying which limit, or fails (`exit_behavior: error`).
 */
class ModelCallLimit implements Middleware {
  readonly name = "ModelCallLimitMiddleware";
  private runCount = 0;

  constructor(
    private readonly threadLimit: number | undefined,
    private readonly runLimit: number | undefined,
    private readonly exitBehavior: "end" | "error",
    /** Distinguishes this instance's thread count from another's of the same agent. */
    private readonly counter: string,
  ) {}

  beforeAgent = async (): Promise<undefined> => {
    this.runCount = 0;
    return undefined;
  };

  beforeModel = async (state: AgentState, run: AgentRun): Promise<StateUpdate | undefined> => {
    const thread = threadCount(run, this.counter).get();
    const exceeded = [
      ...(this.threadLimit !== undefined && thread >= this.threadLimit ? [`thread limit (${thread}/${this.threadLimit})`] : []),
      ...(this.runLimit !== undefined && this.runCount >= this.runLimit ? [`run limit (${this.runCount}/${this.runLimit})`] : []),
    ];
    if (exceeded.length === 0) return undefined;
    const message = `Model call limits exceeded: ${exceeded.join(", ")}`;
    if (this.exitBehavior === "error") throw Object.assign(new Error(message), { name: "ModelCallLimitExceededError" });
    return { messages: [...state.messages, { role: "assistant", content: message }], jumpTo: "end" };
  };

  afterModel = async (_state: AgentState, run: AgentRun): Promise<undefined> => {
    this.runCount++;
    threadCount(run, this.counter).add(1);
    return undefined;
  };
}

export const modelCallLimitMiddleware: PrebuiltMiddleware = {
  args: { thread_limit: optional(integer(0)), run_limit: optional(integer(0)), exit_behavior: oneOf("end", "error") },
  check: (args) => ((args["thread_limit"] ?? null) === null && (args["run_limit"] ?? null) === null ? [{ key: "", reason: "ModelCallLimitMiddleware needs thread_limit or run_limit" }] : []),
  make: (args, _agent, index) =>
    new ModelCallLimit(
      (args["thread_limit"] as number | null | undefined) ?? undefined,
      (args["run_limit"] as number | null | undefined) ?? undefined,
      (args["exit_behavior"] as "end" | "error" | undefined) ?? "end",
      `middleware[${index}]`,
    ),
};
