import type { JsonObject } from "@bufbuild/protobuf";
import type { ChatSession } from "../chat-session.js";
import type { AgentSpec } from "../agent-network.js";
import { LibraryToolActivation, noProgress } from "./library-tool-activation.js";
import { runsInPython } from "./library-tools.js";
import type { OfferedTool } from "../tool-call.js";
import { safeToolName } from "../tool-names.js";

/** What runner.py answers to `describe`: a tool's (or each of a toolkit's tools') own name, description and schema. */
interface DescribedLibraryTools {
  toolkit: boolean;
  tools: { name: string; description: string; parameters: JsonObject }[];
}

/**
 * A library tool run in Python as the agent's LLM is offered it, described by the LangChain tool itself, unless the
 * agent spec has its own function block (undefined then, and for a tool Axon implements: described as other nodes are).
 * A tool goes by the agent's name; a toolkit is each of its tools, named `<agent>_<tool>` as neuro-san names them.
 *
 * The description is asked of the request's Python worker when the agent builds its tool list, not at load: importing a
 * LangChain class takes seconds and making one often needs keys only the server's environment has, which a check
 * process at every reload would pay again for nothing; the worker that runs the calls imports it once, and keeps the
 * instance for the chat's calls. Load only looks for the package (codedToolProblems). A tool that cannot be described
 * is offered under the agent's name all the same: its calls try again, and fail with the clear error of why.
 */
export async function offeredPythonLibraryTools(session: ChatSession, spec: AgentSpec, name: string): Promise<OfferedTool[] | undefined> {
  if (spec.function !== undefined || !runsInPython(spec)) return undefined;
  let described: DescribedLibraryTools;
  try {
    const target = { library: spec.className, settings: spec.args ?? {}, describe: true as const, args: {} };
    described = JSON.parse((await session.request.python.call(session.slyData, target, noProgress, session.signal)).result) as DescribedLibraryTools;
  } catch (error) {
    session.signal.throwIfAborted();
    session.services.logger.warn({ err: error, tool: spec.name, class: spec.className, network: session.network.name }, "library tool could not be described");
    const parameters = { type: "object", properties: {} };
    return [{ name, originName: spec.name, description: `The library tool ${spec.className}, which could not be loaded.`, parameters, activation: new LibraryToolActivation(session, spec) }];
  }
  if (!described.toolkit) {
    const { description, parameters } = described.tools[0]!;
    return [{ name, originName: spec.name, description, parameters, activation: new LibraryToolActivation(session, spec) }];
  }
  return described.tools.map(({ name: own, description, parameters }) => {
    const toolName = safeToolName(`${spec.name}_${own}`);
    return { name: toolName, originName: toolName, description, parameters, activation: new LibraryToolActivation(session, spec, own) };
  });
}
