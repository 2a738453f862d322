import type { LlmResponse } from "../../llm/llm.js";
import type { AgentRun, Middleware, ModelHandler, ModelRequest } from "../middleware-chain.js";
import { oneOf, type PrebuiltMiddleware } from "./middleware-args.js";
import { backoffArgs, backoffOf, describeError, pause, type Backoff } from "./retry-delay.js";

/**
 * LangChain's ModelRetryMiddleware: a failed model call is tried again `max_retries` times with exponential backoff;
 * then the run fails (`on_failure: error`) or goes on with an answer saying the model failed (`continue`).
 */
class ModelRetry implements Middleware {
  readonly name = "ModelRetryMiddleware";

  constructor(
    private readonly backoff: Backoff,
    private readonly onFailure: "continue" | "error",
  ) {}

  async wrapModelCall(request: ModelRequest, handler: ModelHandler, run: AgentRun): Promise<LlmResponse> {
    const { signal } = run.session;
    for (let retry = 0; ; retry++) {
      try {
        return await handler(request);
      } catch (error) {
        signal.throwIfAborted();
        if (retry < this.backoff.maxRetries) {
          await pause(this.backoff.delayMs(retry), signal);
          continue;
        }
        if (this.onFailure === "error") throw error;
        const text = `The model call failed after ${retry + 1} attempt(s) with ${describeError(error)}`;
        return { text, toolCalls: [], usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0, cost: 0 }, model: request.llm.description };
      }
    }
  }
}

export const modelRetryMiddleware: PrebuiltMiddleware = {
  args: { ...backoffArgs, on_failure: oneOf("continue", "error") },
  unsupported: { retry_on: "exception classes or a Python callable" },
  make: (args) => new ModelRetry(backoffOf(args), (args["on_failure"] as "continue" | "error" | undefined) ?? "continue"),
};
