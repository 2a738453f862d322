import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { AxonError } from "../errors.js";
import { ChatMessage_ChatMessageType as MessageType, type Origin } from "../gen/neuro_san/api/grpc/chat_pb.js";
import type { AgentSpec } from "./agent-network.js";
import type { ChatSession } from "./chat-session.js";
import type { CodedToolContext } from "./coded-tool.js";
import type { PythonToolLocation } from "./coded-tools.js";
import { nonJsonValueIn, restoreNonJsonKeys } from "./json-values.js";
import { isJsonObject } from "../json.js";
import { applySlyDataChanges, PythonToolError, type CallbackHandlers } from "./python/python-worker.js";
import { reservationistRequests } from "./reservationist-requests.js";
import { runReported } from "./run-reported.js";
import type { Activation, Caller, ToolCall } from "./tool-call.js";
import { useTool } from "./tool-use.js";

/**
 * A coded tool called by an LLM: static `args` override the LLM's; it may read and write sly_data. What it returns,
 * writes to sly_data or reports as progress must be JSON: anything else (NaN, Infinity, a Date...) fails the call with
 * an error naming the value, and sly_data keeps its previous value for that key.
 */
export class CodedToolActivation implements Activation {
  constructor(
    private readonly session: ChatSession,
    private readonly spec: AgentSpec,
  ) {}

  invoke(llmArgs: JsonObject, { origin }: ToolCall): Promise<string> {
    const { session, spec } = this;
    const args = { ...llmArgs, ...spec.args };
    return runReported(session, origin, args, async () => {
      const loaded = await session.services.codedTools.load(session.network.name, spec.className!);
      // Loading a module spans turns of the event loop: a chat cancelled meanwhile must not run the tool.
      session.signal.throwIfAborted();
      if (loaded.kind === "python") return runPythonTool(session, spec, loaded.tool, args, origin);
      const tool = new loaded.ToolClass();
      const context: CodedToolContext = {
        reportProgress: (structure) => {
          const problem = nonJsonValueIn(structure, "the progress");
          if (problem !== undefined) throw notJson(`reported progress JSON cannot carry: ${problem}`);
          session.emit({ type: MessageType.AGENT_PROGRESS, origin, structure });
        },
        metadata: session.metadata,
        signal: session.signal,
        useTool: (toolName, toolArgs = {}, slyData = session.slyData) =>
          useTool(slyData === session.slyData ? session : session.forToolUse(slyData, session.signal), { origin, spec }, toolName, toolArgs),
      };
      const slyDataBefore = structuredClone(session.slyData);
      const outcome = await Promise.resolve()
        .then(() => (tool.asyncInvoke ? tool.asyncInvoke(args, session.slyData, context) : tool.invoke?.(args, session.slyData)))
        .then((value: unknown) => ({ value }), (error: unknown) => ({ error }));
      // Even a tool that failed may have written sly_data: what is not JSON never stays.
      const written = restoreNonJsonKeys(session.slyData, slyDataBefore);
      if ("error" in outcome) throw outcome.error;
      if (written !== undefined) throw notJson(`wrote a value JSON cannot carry, which was not kept: ${written}`);
      const returned = typeof outcome.value === "string" ? undefined : nonJsonValueIn(outcome.value ?? null, "the result");
      if (returned !== undefined) throw notJson(`returned a value JSON cannot carry: ${returned}`);
      return typeof outcome.value === "string" ? outcome.value : JSON.stringify((outcome.value ?? null) as JsonValue);
    });
  }
}

/**
 * A Python coded tool, run by the request's Python worker as neuro-san runs it: `origin` added to its arguments when
 * the caller did not set it, sly_data as the chat has it now, the changes it made applied to the chat's dict even when
 * it raised. Its exception is a tool error with the type and message; the traceback goes to the log with the failure.
 */
async function runPythonTool(session: ChatSession, spec: AgentSpec, tool: PythonToolLocation, args: JsonObject, origin: Origin[]): Promise<string> {
  const { module, file, className } = tool;
  const toolArgs = { origin: origin.map((step) => ({ tool: step.tool, instantiation_index: step.instantiationIndex })), ...args };
  const progress = (structure: JsonObject) => session.emit({ type: MessageType.AGENT_PROGRESS, origin, structure });
  try {
    const target = { module, file, className, spec: spec.raw, args: toolArgs };
    const answer = await session.request.python.call(session.slyData, target, progress, session.signal, pythonCallbacks(session, { origin, spec }));
    applySlyDataChanges(session.slyData, answer.slyData);
    return answer.result;
  } catch (error) {
    if (error instanceof PythonToolError) applySlyDataChanges(session.slyData, error.slyData);
    throw error;
  }
}

/**
 * What a Python coded tool may ask of Axon while it runs: `use_tool` (neuro-san's BranchActivation.use_tool) runs a
 * tool of its network over the sly_data the tool passed (a copy of its JSON values), answering the text and that
 * sly_data as the called tool left it, for the Python side to update the dict it passed; and, for a tool whose spec
 * says `allow.reservations`, its reservationist's deploy.
 */
function pythonCallbacks(session: ChatSession, caller: Caller): CallbackHandlers {
  const reserving = isJsonObject(caller.spec.raw.allow) && caller.spec.raw.allow.reservations === true;
  return {
    use_tool: async (request, signal) => {
      const { tool, args, sly_data: slyData } = request;
      if (typeof tool !== "string" || tool === "") throw new Error("use_tool needs the name of a tool");
      const scoped = session.forToolUse(isJsonObject(slyData) ? structuredClone(slyData) : {}, signal);
      const text = await useTool(scoped, caller, tool, isJsonObject(args) ? args : {});
      return { text, sly_data: scoped.slyData };
    },
    ...(reserving ? reservationistRequests(session) : {}),
  };
}

function notJson(message: string): AxonError {
  return new AxonError(Code.InvalidArgument, "CODED_TOOL_NOT_JSON", `the coded tool ${message}`);
}
