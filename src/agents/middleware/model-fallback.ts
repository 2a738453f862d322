import type { LlmResponse } from "../../llm/llm.js";
import type { AgentRun, Middleware, ModelHandler, ModelRequest } from "../middleware-chain.js";
import { required, string, type PrebuiltMiddleware } from "./middleware-args.js";

/**
 * LangChain's ModelFallbackMiddleware: when the model call fails, the same request goes to `first_model`. (LangChain's
 * further models are positional arguments, which a network file cannot give; an llm_config's own `fallbacks` can.)
 */
class ModelFallback implements Middleware {
  readonly name = "ModelFallbackMiddleware";

  constructor(private readonly models: string[]) {}

  async wrapModelCall(request: ModelRequest, handler: ModelHandler, run: AgentRun): Promise<LlmResponse> {
    try {
      return await handler(request);
    } catch (error) {
      let failure = error;
      for (const model of this.models) {
        run.session.signal.throwIfAborted();
        try {
          return await handler({ ...request, llm: run.modelFor(model) });
        } catch (next) {
          failure = next;
        }
      }
      throw failure;
    }
  }
}

export const modelFallbackMiddleware: PrebuiltMiddleware = {
  args: { first_model: required(string) },
  unsupported: { additional_models: "further positional arguments" },
  make: (args) => new ModelFallback([args["first_model"] as string]),
};
