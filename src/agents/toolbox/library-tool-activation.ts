import type { JsonObject } from "@bufbuild/protobuf";
import { AxonError, Code } from "../../errors.js";
import type { ChatSession } from "../chat-session.js";
import type { AgentSpec } from "../agent-network.js";
import { runReported } from "../run-reported.js";
import type { Activation, ToolCall } from "../tool-call.js";
import { libraryToolOf } from "./library-tools.js";

/**
 * A toolbox library tool called by an LLM, configured by the merged `args`: Axon's implementation of its class, else
 * the class itself in the request's Python worker, where an exception is a tool error as a Python coded tool's is.
 */
export class LibraryToolActivation implements Activation {
  constructor(
    private readonly session: ChatSession,
    private readonly spec: AgentSpec,
    /** A toolkit's tool, by its own name; absent, the class's only tool. */
    private readonly toolkitTool?: string,
  ) {}

  invoke(llmArgs: JsonObject, { origin }: ToolCall): Promise<string> {
    const { session, spec, toolkitTool } = this;
    return runReported(session, origin, llmArgs, async () => {
      if (spec.className === undefined) {
        throw new AxonError(Code.FailedPrecondition, "LIBRARY_TOOL_UNAVAILABLE", `${spec.toolbox} is not in the toolbox (toolbox tool ${spec.toolbox} of network ${session.network.name})`);
      }
      const tool = libraryToolOf(spec.className);
      if (tool !== undefined) return tool.invoke(llmArgs, spec.args ?? {}, session.signal);
      const target = { library: spec.className, settings: spec.args ?? {}, args: llmArgs, ...(toolkitTool === undefined ? {} : { tool: toolkitTool }) };
      return (await session.request.python.call(session.slyData, target, noProgress, session.signal)).result;
    });
  }
}

/** A LangChain tool reports no progress. */
export function noProgress(): void {}
