import type { JsonObject } from "@bufbuild/protobuf";
import { ChatMessage_ChatMessageType as MessageType, type Origin } from "../gen/neuro_san/api/grpc/chat_pb.js";
import type { LlmMessage, LlmToolCall } from "../llm/llm.js";
import type { ChatSession } from "./chat-session.js";
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
 * without one.
 */
export class LlmAgent {
  constructor(
    private readonly session: ChatSession,
    readonly spec: AgentSpec,
  ) {}

  /** Runs the conversation and returns the node's answer; `history` is what came before `input`. */
  converse(origin: Origin[], history: LlmMessage[], input: string): Promise<string> {
    return traceAgent(this.spec.name, () => this.conversation(origin, history, input));
  }

  private async conversation(origin: Origin[], history: LlmMessage[], input: string): Promise<string> {
    const { session, spec } = this;
    const llm = session.services.llmFor(session.network, spec, session.clientKeys);
    const tools = await this.offeredTools();
    const llmTools = [...tools.values()].map(({ name, description, parameters }) => ({ name, description, parameters }));
    const instructions = spec.instructions ?? "";
    const messages: LlmMessage[] = [{ role: "system", content: instructions }, ...history, { role: "user", content: input }];
    session.emit({ type: MessageType.SYSTEM, text: instructions, origin });
    session.emit({ type: MessageType.HUMAN, text: input, origin });

    for (let iteration = 0; iteration < session.network.limits.maxIterations; iteration++) {
      session.signal.throwIfAborted();
      const response = await llm.complete({ messages, tools: llmTools, signal: session.signal });
      // The SDKs end a streamed answer cut short by the cancellation quietly: its text and tool calls are partial, and
      // a cancelled chat calls no tool of any kind.
      session.signal.throwIfAborted();
      session.addUsage(response.usage);
      if (response.text !== "" || response.toolCalls.length === 0) {
        session.emit({ type: MessageType.AI, text: response.text, origin });
      }
      if (response.toolCalls.length === 0) return response.text;
      messages.push({ role: "assistant", content: response.text, toolCalls: response.toolCalls });
      const caller: Caller = { origin, spec };
      const results = await Promise.all(response.toolCalls.map((call) => this.callTool(tools, call, caller)));
      response.toolCalls.forEach((call, index) => messages.push({ role: "tool", toolCallId: call.id, content: results[index]! }));
    }
    const stopped = `${spec.name} stopped after max_iterations (${session.network.limits.maxIterations}) without an answer.`;
    session.emit({ type: MessageType.AI, text: stopped, origin });
    return stopped;
  }

  /**
   * The node's tools by the name the LLM calls them: its nodes in `tools` order, an MCP server's tools (and a Python
   * toolkit's) in its place. The first tool to take a name keeps it; a later one wanting it is skipped with a warning.
   */
  private async offeredTools(): Promise<Map<string, OfferedTool>> {
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
    return offered;
  }

  private async callTool(tools: Map<string, OfferedTool>, call: LlmToolCall, caller: Caller): Promise<string> {
    const { session } = this;
    const tool = tools.get(call.name);
    if (!tool) return toolErrorText(session.network, call.name, `there is no tool named ${call.name}`);
    const toolName = tool.originName;
    if (call.argumentsError) return toolErrorText(session.network, toolName, `the arguments were not valid JSON: ${call.argumentsError}`);
    // Cycles are allowed (A asks B, B asks A): max_iterations bounds the depth of a chain as it bounds each loop.
    const { maxIterations } = session.network.limits;
    if (caller.origin.length >= maxIterations) {
      return toolErrorText(session.network, toolName, `the chain of calls is deeper than max_iterations (${maxIterations})`);
    }
    session.emit({
      type: MessageType.AGENT,
      origin: caller.origin,
      structure: { invoking_start: true, invoked_agent_name: toolName, params: call.arguments },
    });
    const origin = session.originOf(caller.origin, toolName);
    let text: string;
    try {
      text = await traceTool(toolName, session.network.nodes.get(toolName)?.kind ?? "mcp", call.arguments, () => tool.activation.invoke(call.arguments, { caller, origin }));
    } catch (error) {
      // Cancellation ends the whole chat; any other failure of a tool is something the LLM can work with.
      session.signal.throwIfAborted();
      session.services.logger.warn({ err: error, tool: toolName, network: session.network.name }, "tool failed");
      text = toolErrorText(session.network, toolName, error instanceof Error ? error.message : String(error));
    }
    session.emit({ type: MessageType.AGENT_TOOL_RESULT, origin: caller.origin, toolResultOrigin: origin, text });
    return text;
  }
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
