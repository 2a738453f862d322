import type { JsonObject } from "@bufbuild/protobuf";
import { AxonError, Code } from "../../errors.js";
import { runReported, type Activation, type ToolCall } from "../activation.js";
import type { ChatSession } from "../chat-session.js";
import type { AgentSpec } from "../network.js";
import { libraryToolOf } from "./library-tools.js";

/** A toolbox library tool called by an LLM: Axon's implementation of its class, configured by the merged `args`. */
export class LibraryToolActivation implements Activation {
  constructor(
    private readonly session: ChatSession,
    private readonly spec: AgentSpec,
  ) {}

  invoke(llmArgs: JsonObject, { origin }: ToolCall): Promise<string> {
    const { session, spec } = this;
    return runReported(session, origin, llmArgs, async () => {
      const tool = libraryToolOf(spec.className);
      if (tool === undefined) {
        const what = spec.className === undefined ? `${spec.toolbox} is not in the toolbox` : `Axon has no implementation of the library tool ${spec.className}`;
        throw new AxonError(Code.FailedPrecondition, "LIBRARY_TOOL_UNAVAILABLE", `${what} (toolbox tool ${spec.toolbox} of network ${session.network.name})`);
      }
      return tool.invoke(llmArgs, spec.args ?? {}, session.signal);
    });
  }
}
