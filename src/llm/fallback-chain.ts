import { AxonError, Code } from "../errors.js";
import type { Logger } from "../logger.js";
import type { ProviderClass } from "./config.js";
import type { LlmClient, LlmRequest, LlmResponse } from "./llm.js";
import { ProviderFailure } from "./provider-failure.js";
import { traceLlmCall } from "../telemetry/genai-spans.js";

/** One model of the chain; each has already retried its transient failures. */
export interface ModelClient extends LlmClient {
  readonly provider: ProviderClass;
  readonly model: string;
}

/**
 * Tries each model in order until one answers. Any failure moves on (a 400 from one provider says nothing about the
 * next); a cancelled request stops at once. When all fail: LLM_UNAVAILABLE, with the last failure's status only.
 */
export class FallbackChain implements LlmClient {
  readonly description: string;

  constructor(
    private readonly models: ModelClient[],
    private readonly logger?: Logger,
  ) {
    this.description = models.map((model) => model.description).join(" then ");
  }

  async complete(request: LlmRequest): Promise<LlmResponse> {
    // Built only on failure: an Error captures a stack, which every successful call would pay for.
    let failure: ProviderFailure | undefined;
    let failed: ModelClient | undefined;
    for (const model of this.models) {
      request.signal.throwIfAborted();
      try {
        return await traceLlmCall(model, request.messages, () => model.complete(request));
      } catch (error) {
        request.signal.throwIfAborted();
        failure = error instanceof ProviderFailure ? error : new ProviderFailure("bad_response");
        failed = model;
        this.logger?.warn(
          { provider: model.provider, model: model.model, status: failure.status, errorType: failure.errorType },
          "LLM call failed",
        );
      }
    }
    throw new AxonError(Code.Unavailable, "LLM_UNAVAILABLE", "the LLM did not answer", {
      metadata: {
        model: failed?.model ?? "",
        provider: failed?.provider ?? "",
        status: failure?.status ?? "none",
        ...(failure?.errorType === undefined ? {} : { error_type: failure.errorType }),
        models_tried: String(this.models.length),
      },
    });
  }
}
