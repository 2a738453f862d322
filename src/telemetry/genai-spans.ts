import { SpanKind, type Attributes } from "@opentelemetry/api";
import { reportLlmCall } from "./llm-calls.js";
import { activeTracing, errorType, traced } from "./tracing.js";

/*
 * The spans of the OpenTelemetry GenAI semantic conventions: `invoke_agent <agent>`, `chat <model>`,
 * `execute_tool <tool>`. Prompts, completions, tool arguments and results are recorded only when
 * OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true; sly_data never is, nor are error messages (a provider's text
 * can quote keys or the prompt): a failure shows as its `error.type`.
 */

// The conventions' gen_ai.provider.name values, where Axon's provider classes differ from them.
const providerNames: Record<string, string> = { "azure-openai": "azure.ai.openai", gemini: "gcp.gemini", bedrock: "aws.bedrock" };

/** A chat with a network, or one agent of it answering: `invoke_agent <name>`. */
export function traceAgent<T>(agentName: string, work: () => Promise<T>): Promise<T> {
  return traced(`invoke_agent ${agentName}`, SpanKind.INTERNAL, { "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agentName }, work);
}

/** What a model call's span reads of the model and of the answer. */
export interface LlmCallTarget {
  readonly provider: string;
  readonly model: string;
}
interface LlmCallAnswer {
  readonly text: string;
  readonly toolCalls: readonly unknown[];
  readonly usage: { readonly promptTokens: number; readonly completionTokens: number };
  readonly model: string;
}

/**
 * One request to one model: `chat <model>`, with the tokens it used and why it stopped; counted for the GenAI metrics
 * whether traced or not.
 */
export async function traceLlmCall<T extends LlmCallAnswer>(target: LlmCallTarget, messages: unknown, work: () => Promise<T>): Promise<T> {
  const started = performance.now();
  const record = { provider: providerNames[target.provider] ?? target.provider, model: target.model };
  try {
    const answer = await chatSpan(target, messages, work);
    const usage = { inputTokens: answer.usage.promptTokens, outputTokens: answer.usage.completionTokens };
    reportLlmCall({ ...record, seconds: (performance.now() - started) / 1000, usage });
    return answer;
  } catch (error) {
    reportLlmCall({ ...record, seconds: (performance.now() - started) / 1000, errorType: errorType(error) });
    throw error;
  }
}

function chatSpan<T extends LlmCallAnswer>(target: LlmCallTarget, messages: unknown, work: () => Promise<T>): Promise<T> {
  const tracing = activeTracing();
  if (tracing === undefined) return work();
  const attributes: Attributes = {
    "gen_ai.operation.name": "chat",
    "gen_ai.provider.name": providerNames[target.provider] ?? target.provider,
    "gen_ai.request.model": target.model,
  };
  if (tracing.settings.captureContent) attributes["gen_ai.input.messages"] = JSON.stringify(messages);
  return traced(`chat ${target.model}`, SpanKind.CLIENT, attributes, work, (span, answer) => {
    span.setAttributes({
      "gen_ai.response.model": answer.model,
      "gen_ai.usage.input_tokens": answer.usage.promptTokens,
      "gen_ai.usage.output_tokens": answer.usage.completionTokens,
      "gen_ai.response.finish_reasons": [answer.toolCalls.length > 0 ? "tool_calls" : "stop"],
    });
    if (tracing.settings.captureContent) span.setAttribute("gen_ai.output.messages", JSON.stringify({ text: answer.text, tool_calls: answer.toolCalls }));
  });
}

/** One tool call an LLM made, whatever runs it (`kind`: coded_tool, external_agent, llm_agent, mcp, ...). */
export function traceTool(toolName: string, kind: string, args: unknown, work: () => Promise<string>): Promise<string> {
  const tracing = activeTracing();
  if (tracing === undefined) return work();
  const attributes: Attributes = { "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": toolName, "gen_ai.tool.type": kind };
  if (tracing.settings.captureContent) attributes["gen_ai.tool.call.arguments"] = JSON.stringify(args);
  return traced(`execute_tool ${toolName}`, SpanKind.INTERNAL, attributes, work, (span, result) => {
    if (tracing.settings.captureContent) span.setAttribute("gen_ai.tool.call.result", result);
  });
}
