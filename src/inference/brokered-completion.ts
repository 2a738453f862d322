import type { JsonObject } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { AxonError } from "../errors.js";
import type { NativeCall, NativeCalls, NativeOutcome } from "../operations/native-calls.js";
import type { AnswerSink } from "./answers.js";
import type { ChatRequest } from "./chat-request.js";
import { chatOperation, modelTarget } from "./native-operations.js";
import { relayChatCompletion, type RelayOutcome } from "./upstream-relay.js";
import type { Upstream, Upstreams } from "./upstreams.js";

export interface BrokeredCompletionOptions {
  native: Pick<NativeCalls, "request">;
  upstreams: Upstreams;
  upstream: Upstream;
  clientId: string;
  request: ChatRequest;
  res: AnswerSink;
  headers: Record<string, string>;
}

/**
 * A chat completion with a brokered model: decided as an operation is (`inference.chat` on `{kind: "model", upstream,
 * name}`, the request's size and token bound as the attributes a rule's `limits` bound), then relayed with the
 * upstream's key. Deny answers 403 naming the rule; a rule that asks an operator answers 403 with the pending request's
 * id; allowed calls are relayed at once (nothing is written before), and their outcome is recorded before their answer ends.
 */
export async function completeWithUpstream(options: BrokeredCompletionOptions): Promise<RelayOutcome> {
  const { native, upstreams, upstream, clientId, request } = options;
  const secret = upstreams.secretOf(upstream);
  if (secret === undefined) {
    throw new AxonError(Code.Unavailable, "UPSTREAM_KEY_MISSING", "the upstream serving this model has no key configured", { metadata: { upstream: upstream.name } });
  }
  const decision = await native.request(nativeCallOf(clientId, upstream, request));
  if (decision.effect === "refused") {
    // The message names the deny rule, when a rule refused it.
    throw new AxonError(Code.PermissionDenied, decision.code.toUpperCase(), decision.message, { metadata: decision.rule === undefined ? {} : { rule: decision.rule } });
  }
  if (decision.effect === "pending") {
    throw new AxonError(Code.PermissionDenied, "APPROVAL_PENDING", `this call awaits an operator's approval as request ${decision.requestId}; once approved, calls like it are allowed`, {
      metadata: { approval_request_id: decision.requestId },
    });
  }
  // Recorded before the answer ends: a use an upstream failure gives back is there for the client's next call.
  const finish = (outcome: RelayOutcome) => decision.finish(nativeOutcomeOf(outcome));
  const outcome = await relayChatCompletion({ ...options, secret, beforeEnd: finish });
  // Once only: this records the calls that ended otherwise (the client left, the upstream broke off).
  await finish(outcome);
  return outcome;
}

function nativeOutcomeOf(outcome: RelayOutcome): NativeOutcome {
  const detail: JsonObject = { status: outcome.status, response_bytes: outcome.bytes, ...usageDetail(outcome) };
  const ok = outcome.status >= 200 && outcome.status <= 299 && outcome.failure === undefined;
  return ok ? { ok, detail } : { ok, code: outcome.status === 0 ? "upstream_unreachable" : `upstream_http_${outcome.status}`, message: outcome.failure ?? `the upstream answered HTTP ${outcome.status}`, detail };
}

/** What policy, the operator and the audit see of the call: the model, its size and bound, never the messages. */
function nativeCallOf(clientId: string, upstream: Upstream, request: ChatRequest): NativeCall {
  const bodyBytes = request.raw.byteLength;
  const detail = {
    model: request.model,
    upstream: upstream.name,
    messages: request.messages.length,
    body_bytes: bodyBytes,
    stream: request.stream,
    ...(request.maxTokens === undefined ? {} : { max_tokens: request.maxTokens }),
  };
  return {
    clientId,
    operation: chatOperation,
    target: modelTarget(upstream.name, request.model),
    detail,
    summary: `chat completion with ${request.model} on ${upstream.name}`,
    attributes: { body_bytes: bodyBytes, ...(request.maxTokens === undefined ? {} : { max_tokens: request.maxTokens }) },
  };
}

function usageDetail(outcome: RelayOutcome): JsonObject {
  const usage = outcome.usage;
  return usage === undefined ? {} : { prompt_tokens: usage.promptTokens, completion_tokens: usage.completionTokens, total_tokens: usage.totalTokens };
}
