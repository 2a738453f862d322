import type { JsonObject } from "@bufbuild/protobuf";
import { ChatMessage_ChatMessageType as MessageType, type Origin } from "../gen/neuro_san/api/grpc/chat_pb.js";
import { AxonError } from "../errors.js";
import type { LlmMessage, LlmTool, LlmToolCall } from "../llm/llm.js";
import type { ChatSession } from "./chat-session.js";
import { ToolFailure, type AgentRun, type AgentState, type MiddlewareChain, type ToolCallRequest } from "./middleware-chain.js";
import { middlewareChainOf } from "./middleware/agent-middleware.js";
import { offeredMcpTools } from "./mcp-client/mcp-tools.js";
import type { Activation, Caller, OfferedTool, ToolCall } from "./tool-call.js";
import { toolErrorText } from "./tool-errors.js";
import type { AgentSpec } from "./agent-network.js";
import { libraryToolOf } from "./toolbox/library-tools.js";
import { offeredPythonLibraryTools } from "./toolbox/python-library-tools.js";
import { traceAgent, traceTool } from "../telemetry/genai-spans.js";

/**
 * An LLM node (the front man, or a sub-agent called as a tool): one conversation with its LLM, offering
 * the node's `tools` (an MCP server's tools among them), running each tool call the LLM makes, until the LLM answers
 * without one. Its `middleware` chain wraps the run as LangChain's wraps an agent's (middleware-chain.ts), and what
 * reaches the client is the conversation as the middleware left it.
 */
export class LlmAgent {
  private chain: MiddlewareChain | undefined;
  /** The input as the last run left it (middleware may have redacted it): what the chat's history keeps. */
  input: string | undefined;

  constructor(
    private readonly session: ChatSession,
    readonly spec: AgentSpec,
  ) {}

  /** Runs the conversation and returns the node's answer; `history` is what came before `input`. */
  converse(origin: Origin[], history: LlmMessage[], input: string): Promise<string> {
    return traceAgent(this.spec.name, () => this.attempts(origin, history, input));
  }

  /** `max_attempts`: a run that failed for a reason that may pass (a rate limit, a timeout, a provider's own trouble) is run again. */
  private async attempts(origin: Origin[], history: LlmMessage[], input: string): Promise<string> {
    const { session, spec } = this;
    const maxAttempts = spec.limits?.maxAttempts ?? session.network.limits.maxAttempts;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.conversation(origin, history, input);
      } catch (error) {
        session.signal.throwIfAborted();
        if (attempt >= maxAttempts || !mayPass(error)) throw error;
        session.services.logger.warn({ err: error, agent: spec.name, network: session.network.name, attempt, maxAttempts }, "agent run failed: trying it again");
      }
    }
  }

  private async conversation(origin: Origin[], history: LlmMessage[], input: string): Promise<string> {
    const { session, spec } = this;
    const llm = session.services.llmFor(session.network, spec, session.clientKeys);
    // Made once per activation (a retried run keeps its middleware); without middleware, at once.
    const state: AgentState = { messages: [...history, { role: "user", content: input }] };
    let chain = this.chain;
    if (chain === undefined) {
      const made = middlewareChainOf(session, spec, origin, state.messages);
      chain = this.chain = made instanceof Promise ? await made : made;
    }
    const tools = await this.offeredTools(chain);
    const offered = [...tools.values()];
    const llmTools = toLlmTools(offered);
    const instructions = spec.instructions ?? "";
    const maxSteps = spec.limits?.maxSteps ?? session.network.limits.maxSteps;
    const run: AgentRun = { session, spec, origin, state, modelFor: (model) => session.services.llmFor(session.network, withModel(spec, model), session.clientKeys) };
    const report = new ConversationReport(session, origin, instructions);
    const caller: Caller = { origin, spec };
    const callModel = chain.wrapModel(async (request) => {
      const messages: LlmMessage[] = [{ role: "system", content: request.systemPrompt }, ...request.messages];
      const response = await request.llm.complete({ messages, tools: request.tools === offered ? llmTools : toLlmTools(request.tools), signal: session.signal });
      // The SDKs end a streamed answer cut short by the cancellation quietly: its text and tool calls are partial, and
      // a cancelled chat calls no tool of any kind.
      session.signal.throwIfAborted();
      session.addUsage(response.usage);
      return response;
    }, run);
    // A tool's failure is its result for the model; wraps see it as a ToolFailure first (a retry may get past it).
    const wrappedTool = chain.wrapTool((request) => this.callTool(request, caller, report, chain.wrapsTools), run);
    const callTool = !chain.wrapsTools
      ? wrappedTool
      : (request: ToolCallRequest) =>
          wrappedTool(request).catch((error: unknown) => {
            if (error instanceof ToolFailure) return error.text;
            throw error;
          });
    // The hooks of each kind run only where some middleware has them: an empty chain awaits nothing.
    const has = { beforeAgent: chain.has("beforeAgent"), beforeModel: chain.has("beforeModel"), afterModel: chain.has("afterModel"), afterAgent: chain.has("afterAgent") };

    let next = has.beforeAgent ? await chain.run("beforeAgent", state, run) : undefined;
    let steps = 0;
    // An after_agent hook may send the run back (to the model, say, with a message saying what to fix), as LangChain's
    // graph lets it: the loop runs again, and so do the after_agent hooks when it ends.
    for (;;) {
      while (next !== "end") {
        if (next !== "tools") {
          next = has.beforeModel ? await chain.run("beforeModel", state, run) : undefined;
          if (next === "end") break;
        }
        if (next !== "tools") {
          if (++steps > maxSteps) return report.stopped(state, `${spec.name} stopped after max_steps (${maxSteps}) without an answer.`);
          session.signal.throwIfAborted();
          report.conversation(state);
          const response = await callModel({ systemPrompt: instructions, messages: state.messages, tools: offered, llm });
          state.messages.push({ role: "assistant", content: response.text, ...(response.toolCalls.length === 0 ? {} : { toolCalls: response.toolCalls }) });
          next = has.afterModel ? await chain.run("afterModel", state, run) : undefined;
          report.answer(state);
          if (next === "end") break;
          if (next === "model") continue;
        }
        const calls = pendingToolCalls(state);
        if (calls.length === 0) break;
        if (++steps > maxSteps) return report.stopped(state, `${spec.name} stopped after max_steps (${maxSteps}) without an answer.`);
        const results = await Promise.all(calls.map((toolCall) => callTool({ toolCall, tool: tools.get(toolCall.name) })));
        calls.forEach((toolCall, index) => state.messages.push({ role: "tool", toolCallId: toolCall.id, content: results[index]! }));
        next = "model";
      }
      report.conversation(state);
      next = has.afterAgent ? await chain.run("afterAgent", state, run) : undefined;
      if (next === undefined || next === "end") break;
    }
    this.input = state.messages.findLast((message) => message.role === "user")?.content;
    return state.messages.findLast((message) => message.role === "assistant")?.content ?? "";
  }

  /**
   * The node's tools by the name the LLM calls them: its nodes in `tools` order, an MCP server's tools (and a Python
   * toolkit's) in its place. The first tool to take a name keeps it; a later one wanting it is skipped with a warning.
   */
  private async offeredTools(chain: MiddlewareChain): Promise<Map<string, OfferedTool>> {
    const { session, spec } = this;
    const named = [...toolNames(spec.tools)].flatMap(([reference, name]) => {
      const node = session.network.nodes.get(reference);
      return node === undefined ? [] : [{ node, name }];
    });
    const expanded = await Promise.all(
      named.map(({ node, name }) =>
        node.kind === "mcp_server" ? offeredMcpTools(session, spec, node.name, name) : node.kind === "library_tool" ? offeredPythonLibraryTools(session, node, name) : undefined,
      ),
    );
    const offered = new Map<string, OfferedTool>();
    named.forEach(({ node, name }, index) => {
      const tools = expanded[index] ?? [{ name, originName: node.name, ...describeTool(session, node), activation: session.services.activationOf(session, node) }];
      for (const tool of tools) {
        if (!offered.has(tool.name)) offered.set(tool.name, tool);
        else session.services.logger.warn({ tool: tool.name, agent: spec.name, network: session.network.name }, "tool skipped: its name is taken");
      }
    });
    for (const tool of chain.tools) {
      if (!offered.has(tool.name)) offered.set(tool.name, tool);
      else session.services.logger.warn({ tool: tool.name, agent: spec.name, network: session.network.name }, "middleware tool skipped: its name is taken");
    }
    return offered;
  }

  /** The innermost tool handler: the call as the middleware left it, run by the tool it names. */
  private async callTool({ toolCall: call, tool }: ToolCallRequest, caller: Caller, report: ConversationReport, throwFailures: boolean): Promise<string> {
    const { session } = this;
    if (!tool) return toolErrorText(session.network, call.name, `there is no tool named ${call.name}`);
    const toolName = tool.originName;
    if (call.argumentsError) return toolErrorText(session.network, toolName, `the arguments were not valid JSON: ${call.argumentsError}`);
    // Cycles are allowed (A asks B, B asks A): max_steps bounds the depth of a chain as it bounds each run.
    const maxSteps = caller.spec.limits?.maxSteps ?? session.network.limits.maxSteps;
    if (caller.origin.length >= maxSteps) {
      return toolErrorText(session.network, toolName, `the chain of calls is deeper than max_steps (${maxSteps})`);
    }
    session.emit({
      type: MessageType.AGENT,
      origin: caller.origin,
      structure: { invoking_start: true, invoked_agent_name: toolName, params: call.arguments },
    });
    const origin = session.originOf(caller.origin, toolName);
    report.toolRan(call.id, origin);
    try {
      return await traceTool(toolName, session.network.nodes.get(toolName)?.kind ?? "mcp", call.arguments, () => tool.activation.invoke(call.arguments, { caller, origin }));
    } catch (error) {
      // Cancellation ends the whole chat; any other failure of a tool is something the LLM can work with.
      session.signal.throwIfAborted();
      session.services.logger.warn({ err: error, tool: toolName, network: session.network.name }, "tool failed");
      const text = toolErrorText(session.network, toolName, error instanceof Error ? error.message : String(error));
      if (throwFailures) throw new ToolFailure(text, error);
      return text;
    }
  }
}

/**
 * What a MAXIMAL client sees of one conversation: the SYSTEM and HUMAN messages once, the model's answers, the tools'
 * results. Each is reported as the state holds it when the model next sees it (or the run ends), so that what the
 * middleware changed (a redacted input, a cleared result) is what the client sees.
 */
class ConversationReport {
  private started = false;
  private readonly ran = new Map<string, Origin[]>();

  constructor(
    private readonly session: ChatSession,
    private readonly origin: Origin[],
    private readonly instructions: string,
  ) {}

  toolRan(toolCallId: string, origin: Origin[]): void {
    this.ran.set(toolCallId, origin);
  }

  /** Before a model call, and at the end: the input first time, then the results of the tools that ran since. */
  conversation(state: AgentState): void {
    const { session, origin } = this;
    if (!this.started) {
      this.started = true;
      session.emit({ type: MessageType.SYSTEM, text: this.instructions, origin });
      const input = state.messages.findLast((message) => message.role === "user");
      session.emit({ type: MessageType.HUMAN, text: input?.content ?? "", origin });
    }
    if (this.ran.size === 0) return;
    for (const message of state.messages) {
      if (message.role !== "tool") continue;
      const toolResultOrigin = this.ran.get(message.toolCallId);
      if (toolResultOrigin === undefined) continue;
      this.ran.delete(message.toolCallId);
      session.emit({ type: MessageType.AGENT_TOOL_RESULT, origin, toolResultOrigin, text: message.content });
    }
    this.ran.clear();
  }

  /** After the model answered and the after-model hooks ran: its text, unless it only called tools. */
  answer(state: AgentState): void {
    const last = state.messages.at(-1);
    if (last?.role !== "assistant") return;
    if (last.content !== "" || (last.toolCalls ?? []).length === 0) this.session.emit({ type: MessageType.AI, text: last.content, origin: this.origin });
  }

  stopped(state: AgentState, text: string): string {
    this.conversation(state);
    this.session.emit({ type: MessageType.AI, text, origin: this.origin });
    return text;
  }
}

/** The calls of the model's last answer that no tool message answers yet (a middleware may have answered some). */
function pendingToolCalls(state: AgentState): LlmToolCall[] {
  const latest = state.messages.at(-1);
  if (latest?.role === "assistant") return latest.toolCalls ?? [];
  const last = state.messages.findLastIndex((message) => message.role === "assistant");
  const answer = state.messages[last];
  if (answer?.role !== "assistant" || answer.toolCalls === undefined) return [];
  const answered = new Set(state.messages.slice(last + 1).flatMap((message) => (message.role === "tool" ? [message.toolCallId] : [])));
  return answer.toolCalls.filter((call) => !answered.has(call.id));
}

function toLlmTools(tools: readonly OfferedTool[]): LlmTool[] {
  return tools.map(({ name, description, parameters }) => ({ name, description, parameters }));
}

/**
 * Failures another attempt may get past: the LLM provider's rate limits, timeouts, lost connections and its own
 * server errors. Not a key refused (401, 403), a request refused (400, 404, 422), nor a tool's or a middleware's error.
 */
function mayPass(error: unknown): boolean {
  if (!(error instanceof AxonError) || error.reason !== "LLM_UNAVAILABLE") return false;
  const status = error.metadata["status"] ?? "";
  return status === "timeout" || status === "connection" || status === "408" || status === "409" || status === "429" || /^5\d\d$/.test(status);
}

/** The agent's LLM config with another model, named as LangChain names one (`gpt-4o-mini`, `openai:gpt-4o-mini`). */
function withModel(spec: AgentSpec, model: string): AgentSpec {
  const colon = model.indexOf(":");
  const provider = colon < 0 ? undefined : model.slice(0, colon);
  const modelName = colon < 0 ? model : model.slice(colon + 1);
  const providerClasses: Record<string, string> = { google_genai: "gemini", google_vertexai: "gemini", bedrock_converse: "bedrock" };
  const llmConfig = { ...spec.llmConfig, model_name: modelName, ...(provider === undefined ? {} : { class: providerClasses[provider] ?? provider }) };
  return { ...spec, llmConfig };
}

/** A sub-agent called as a tool: its input is the arguments as sentences, then its `command`. */
export class LlmAgentActivation implements Activation {
  constructor(
    private readonly session: ChatSession,
    private readonly spec: AgentSpec,
  ) {}

  invoke(args: JsonObject, { origin }: ToolCall): Promise<string> {
    const input = [argumentsAsSentences(args), this.spec.command].filter(Boolean).join("\n");
    return new LlmAgent(this.session, this.spec).converse(origin, [], input);
  }
}

export function argumentsAsSentences(args: JsonObject): string {
  return Object.entries(args)
    .map(([key, value]) => `The ${key} is ${typeof value === "string" ? value : JSON.stringify(value)}.`)
    .join(" ");
}

/**
 * How a node is offered to an LLM: its function block; for another network, that network's front man's; for a
 * library tool without one, what Axon's implementation of it says (one run in Python describes itself, see
 * offeredPythonLibraryTools).
 */
function describeTool(session: ChatSession, tool: AgentSpec): { description: string; parameters: JsonObject } {
  let fn = tool.function;
  if (tool.external?.kind === "same_server") fn = session.services.functionOf(tool.external.network) ?? fn;
  if (tool.kind === "library_tool") fn ??= libraryToolOf(tool.className);
  const description = fn?.description ?? (tool.external ? `Ask the agent network ${tool.name}.` : tool.name);
  const parameters = fn?.parameters ?? {
    type: "object",
    properties: { inquiry: { type: "string", description: "What to ask." } },
    required: ["inquiry"],
  };
  return { description, parameters };
}

/**
 * LLM tool names must match `^[A-Za-z0-9_-]{1,64}$`: `/hello_world` is offered as `hello_world`, a URL by
 * its last path segment, with a suffix when two would collide.
 */
export function toolNames(references: string[]): Map<string, string> {
  const names = new Map<string, string>();
  const taken = new Set<string>();
  for (const reference of references) {
    const base = (reference.split("/").filter(Boolean).pop() ?? "tool").replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 60) || "tool";
    let name = base;
    for (let suffix = 2; taken.has(name); suffix++) name = `${base}_${suffix}`;
    taken.add(name);
    names.set(reference, name);
  }
  return names;
}
