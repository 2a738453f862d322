import type { AgentRun, Middleware, ToolCallRequest, ToolHandler } from "../middleware-chain.js";
import { ToolFailure } from "../middleware-chain.js";
import { oneOf, optional, stringList, type PrebuiltMiddleware } from "./middleware-args.js";
import { backoffArgs, backoffOf, pause, type Backoff } from "./retry-delay.js";

/**
 * LangChain's ToolRetryMiddleware: a tool that failed (of `tools`, or any) runs again `max_retries` times with
 * exponential backoff; then the model gets the failure as the tool's result (`continue`, `return_message`) or the run
 * fails (`error`, `raise`).
 */
class ToolRetry implements Middleware {
  readonly name = "ToolRetryMiddleware";

  constructor(
    private readonly backoff: Backoff,
    private readonly retried: string[] | undefined,
    private readonly raise: boolean,
  ) {}

  async wrapToolCall(request: ToolCallRequest, handler: ToolHandler, run: AgentRun): Promise<string> {
    if (this.retried !== undefined && !this.retried.includes(request.toolCall.name) && !this.retried.includes(request.tool?.originName ?? "")) return handler(request);
    const { signal } = run.session;
    for (let retry = 0; ; retry++) {
      try {
        return await handler(request);
      } catch (error) {
        signal.throwIfAborted();
        if (!(error instanceof ToolFailure)) throw error;
        if (retry < this.backoff.maxRetries) {
          await pause(this.backoff.delayMs(retry), signal);
          continue;
        }
        if (this.raise) throw error.cause instanceof Error ? error.cause : error;
        return `${error.text} (after ${retry + 1} attempt(s))`;
      }
    }
  }
}

export const toolRetryMiddleware: PrebuiltMiddleware = {
  args: { ...backoffArgs, tools: optional(stringList), on_failure: oneOf("continue", "error", "return_message", "raise") },
  unsupported: { retry_on: "exception classes or a Python callable" },
  make: (args) => {
    const onFailure = (args["on_failure"] as string | undefined) ?? "continue";
    return new ToolRetry(backoffOf(args), (args["tools"] as string[] | null | undefined) ?? undefined, onFailure === "error" || onFailure === "raise");
  },
};
