import { randomUUID } from "node:crypto";
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { ChatMessage_ChatMessageType as MessageType, type Origin } from "../../gen/neuro_san/api/grpc/chat_pb.js";
import type { LlmMessage, LlmResponse } from "../../llm/llm.js";
import type { AgentSpec, MiddlewareSpec } from "../agent-network.js";
import type { ChatSession } from "../chat-session.js";
import { MiddlewareFailure, ToolFailure, type AgentRun, type AgentState, type Jump, type Middleware, type ModelRequest, type StateUpdate } from "../middleware-chain.js";
import { applySlyDataChanges, PythonToolError, type CallbackHandlers, type SlyDataChanges } from "../python/python-worker.js";
import { reservationistRequests } from "../reservationist-requests.js";
import type { Activation, OfferedTool } from "../tool-call.js";

/** A message as it crosses to Python (runner.py makes LangChain's message of it, and back). */
interface WireMessage extends JsonObject {
  role: string;
  content: string;
  id: string;
}

interface Made {
  hooks: string[];
  tools: { name: string; description: string; parameters: JsonObject }[];
}

/**
 * A network's own AgentMiddleware class, run in the request's Python worker: made once per agent activation (special
 * args filled in there), each hook it defines called with LangChain's state, its wraps' handlers calling back into
 * Axon (`model_call`, `tool_call`) to run the rest of the chain, its reservationist's deploys too where the entry says
 * `allow.reservations`. What it raises fails the agent's run, naming it.
 */
export async function pythonMiddleware(
  session: ChatSession,
  spec: AgentSpec,
  { className, args, allowReservations }: MiddlewareSpec,
  origin: Origin[],
  index: number,
  history: LlmMessage[],
): Promise<Middleware> {
  const instance = `${randomUUID()}.${index}`;
  const wireOrigin = origin.map((step) => ({ tool: step.tool, instantiation_index: step.instantiationIndex }));
  // Its reservationist (given where the entry allows reservations) may deploy from any hook.
  const reserving = allowReservations ? reservationistRequests(session) : {};
  const call = async (hook: string, payload: JsonObject, callbacks: CallbackHandlers = {}): Promise<JsonObject> => {
    const target = { middleware: { class: className, args, instance, origin: wireOrigin, reservations: allowReservations }, hook, payload };
    const progress = (structure: JsonObject) => session.emit({ type: MessageType.AGENT_PROGRESS, origin, structure });
    try {
      const answer = await session.request.python.call(session.slyData, target, progress, session.signal, { ...reserving, ...callbacks });
      applySlyDataChanges(session.slyData, answer.slyData);
      return JSON.parse(answer.result) as JsonObject;
    } catch (error) {
      if (error instanceof PythonToolError) applySlyDataChanges(session.slyData, error.slyData);
      throw error;
    }
  };

  // `chat_history`: the agent's conversation as it starts, for a class that takes it.
  const name = className.slice(className.lastIndexOf(".") + 1);
  // A class that cannot be made (a package it imports is missing, its constructor raised) fails the run, named.
  const made = (await call("make", { chat_history: toWire(history) }).catch((error: unknown) => {
    session.signal.throwIfAborted();
    throw new MiddlewareFailure(name, "__init__", error);
  })) as unknown as Made;
  const middleware: { -readonly [K in keyof Middleware]: Middleware[K] } = { name };
  const stateHook = (hook: string) => async (state: AgentState): Promise<StateUpdate | undefined> => {
    const answer = await call(hook, { state: { messages: toWire(state.messages) } });
    const update: StateUpdate = {};
    if (Array.isArray(answer["messages"])) update.messages = (answer["messages"] as WireMessage[]).map(fromWire);
    if (typeof answer["jump_to"] === "string") update.jumpTo = answer["jump_to"] as Jump;
    return update.messages === undefined && update.jumpTo === undefined ? undefined : update;
  };
  if (made.hooks.includes("abefore_agent")) middleware.beforeAgent = stateHook("abefore_agent");
  if (made.hooks.includes("abefore_model")) middleware.beforeModel = stateHook("abefore_model");
  if (made.hooks.includes("aafter_model")) middleware.afterModel = stateHook("aafter_model");
  if (made.hooks.includes("aafter_agent")) middleware.afterAgent = stateHook("aafter_agent");
  if (made.hooks.includes("awrap_model_call")) {
    middleware.wrapModelCall = async (request, handler, run) => {
      // The model call the Python handler asked for last: its usage and model stand for the answer it returns.
      let inner: LlmResponse | undefined;
      const model_call = async (asked: JsonObject) => {
        levelSlyData(session, asked);
        inner = await handler(requestOf(asked["request"] as JsonObject, request, run));
        return { message: toWire([assistantOf(inner)])[0]!, sly_data: session.slyData };
      };
      const answer = await call("awrap_model_call", { request: requestToWire(request) }, { model_call });
      const message = fromWire(answer["message"] as WireMessage);
      return {
        text: message.content,
        toolCalls: message.role === "assistant" ? (message.toolCalls ?? []) : [],
        usage: inner?.usage ?? { promptTokens: 0, completionTokens: 0, totalTokens: 0, cost: 0 },
        model: inner?.model ?? request.llm.description,
      };
    };
  }
  if (made.hooks.includes("awrap_tool_call")) {
    middleware.wrapToolCall = async (request, handler, run) => {
      const tool_call = async (asked: JsonObject): Promise<JsonObject> => {
        levelSlyData(session, asked);
        const call = asked["tool_call"] as JsonObject;
        const args = (call["args"] ?? {}) as JsonObject;
        try {
          return { content: await handler({ ...request, toolCall: { ...request.toolCall, arguments: args } }), sly_data: session.slyData };
        } catch (error) {
          // A tool's failure is the model's to read, as without the middleware.
          if (error instanceof ToolFailure) return { content: error.text, status: "error", sly_data: session.slyData };
          throw error;
        }
      };
      const { toolCall, tool } = request;
      const payload = {
        request: {
          tool_call: { name: toolCall.name, args: toolCall.arguments, id: toolCall.id },
          tool: tool === undefined ? null : { name: tool.name, description: tool.description, parameters: tool.parameters },
          messages: toWire(run.state.messages),
        },
      };
      return String((await call("awrap_tool_call", payload, { tool_call }))["content"] ?? "");
    };
  }
  middleware.tools = made.tools.map((described): OfferedTool => {
    const activation: Activation = { invoke: async (toolArgs) => String((await call("tool", { name: described.name, args: toolArgs }))["content"] ?? "") };
    return { ...described, originName: described.name, activation };
  });
  return middleware;
}

/** What the calling hook changed in sly_data before it handed on: the rest of the chain sees it. */
function levelSlyData(session: ChatSession, asked: JsonObject): void {
  const changes = asked["sly_data"] as unknown as SlyDataChanges | undefined;
  if (changes !== undefined) applySlyDataChanges(session.slyData, changes);
}

function requestToWire(request: ModelRequest): JsonObject {
  return {
    system_prompt: request.systemPrompt,
    messages: toWire(request.messages),
    tools: request.tools.map(({ name, description, parameters }) => ({ name, description, parameters })),
    model: request.llm.description,
  };
}

/** The request the Python handler passed on: its prompt, messages and tools (by name, of those offered), its model. */
function requestOf(asked: JsonObject, original: ModelRequest, run: AgentRun): ModelRequest {
  const names = Array.isArray(asked["tools"]) ? (asked["tools"] as JsonValue[]) : undefined;
  const tools = names === undefined ? original.tools : original.tools.filter((tool) => names.includes(tool.name));
  const model = asked["model"];
  return {
    systemPrompt: typeof asked["system_prompt"] === "string" ? asked["system_prompt"] : original.systemPrompt,
    messages: Array.isArray(asked["messages"]) ? (asked["messages"] as WireMessage[]).map(fromWire) : original.messages,
    tools,
    llm: typeof model === "string" && model !== original.llm.description ? run.modelFor(model) : original.llm,
  };
}

function assistantOf(response: LlmResponse): LlmMessage {
  return { role: "assistant", content: response.text, ...(response.toolCalls.length === 0 ? {} : { toolCalls: response.toolCalls }) };
}

/** Messages as they cross; each gets the id it keeps from now on, so that LangChain's ids name the same message. */
function toWire(messages: LlmMessage[]): WireMessage[] {
  return messages.map((message) => {
    message.id ??= `axon-${randomUUID()}`;
    const wire: WireMessage = { role: message.role, content: message.content, id: message.id };
    if (message.role === "assistant" && message.toolCalls !== undefined) wire["tool_calls"] = message.toolCalls.map(({ id, name, arguments: args }) => ({ id, name, arguments: args }));
    if (message.role === "tool") wire["tool_call_id"] = message.toolCallId;
    return wire;
  });
}

function fromWire(wire: WireMessage): LlmMessage {
  const { role, content, id } = wire;
  if (role === "assistant") {
    const calls = wire["tool_calls"] as { id: string; name: string; arguments: JsonObject }[] | undefined;
    return { role, content, id, ...(calls === undefined || calls.length === 0 ? {} : { toolCalls: calls.map(({ id: callId, name, arguments: args }) => ({ id: callId, name, arguments: args })) }) };
  }
  if (role === "tool") return { role, content, id, toolCallId: String(wire["tool_call_id"]) };
  return { role: role === "system" ? "system" : "user", content, id };
}
