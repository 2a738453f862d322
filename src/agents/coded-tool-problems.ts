import path from "node:path";
import { locateCodedTool } from "./coded-tool-location.js";
import type { AgentNetwork } from "./agent-network.js";
import type { RegistryProblem } from "./problem.js";
import type { PythonLoadCheck } from "./python/python-check.js";
import { BUILT_IN_CODED_TOOLS } from "./toolbox/default-toolbox.js";
import { runsInPython } from "./toolbox/library-tools.js";

/**
 * What the coded tools of a network, and its library tools run in Python, will fail on, found when it loads (it is
 * still served; their calls fail with a clear error): a class found nowhere, a Python file that does not compile, a
 * library tool's package the interpreter does not have. Returns the Python files too, so a change to one reloads the
 * network.
 */
export async function codedToolProblems(
  network: AgentNetwork,
  toolPath: string,
  importRoots: string[],
  python: PythonLoadCheck | undefined,
): Promise<{ problems: RegistryProblem[]; files: string[] }> {
  const nodes = [...network.nodes.values()];
  const warning = (node: (typeof nodes)[number], key: string, reason: string): RegistryProblem => ({
    file: network.file,
    key: `${node.keyPath}.${key}`,
    reason: `${reason}; calls of ${node.name} will fail`,
    severity: "warning",
  });
  const found = nodes.flatMap((node) => {
    if (node.kind !== "coded_tool" || node.className === undefined) return [];
    const key = node.toolbox === undefined ? "class" : "toolbox";
    return [{ node, key, location: locateCodedTool(toolPath, network.name, node.className, importRoots) }];
  });
  const codedProblems = found.map(async ({ node, key, location }): Promise<RegistryProblem | undefined> => {
    if (location.kind === "missing") {
      if (BUILT_IN_CODED_TOOLS.has(node.className!)) return undefined;
      const module = node.className!.split(".").slice(0, -1).join(path.sep);
      return warning(node, key, `${node.className} was not found: no ${module}.{py,js,mjs,ts,mts} under ${toolPath} for network ${network.name}`);
    }
    if (location.kind !== "python" || python === undefined) return undefined;
    const problem = await python.problemOf(location.file);
    if (problem === undefined) return undefined;
    const where = problem.line === undefined ? location.file : `${location.file}:${problem.line}`;
    return warning(node, key, `${node.className} cannot load: ${problem.message} (${where})`);
  });
  // Only the top-level package is looked for: finding `a.b.c` would import `a` and `a.b`, which for LangChain costs
  // seconds at every load. A wrong module under an installed package is a clear tool error at the first call.
  const libraryProblems = nodes.filter(runsInPython).map(async (node): Promise<RegistryProblem | undefined> => {
    const problem = python === undefined ? undefined : await python.moduleProblem(node.className.split(".")[0]!);
    if (problem === undefined) return undefined;
    return warning(
      node,
      "toolbox",
      `${node.toolbox} is the library tool ${node.className}, which runs in Python and cannot be imported there: ${problem.message}; ` +
        `install its package into the interpreter AXON_PYTHON names, or set AXON_PYTHON to one that has it`,
    );
  });
  const problems = await Promise.all([...codedProblems, ...libraryProblems]);
  return {
    problems: problems.filter((problem) => problem !== undefined),
    files: found.flatMap(({ location }) => (location.kind === "python" ? [location.file] : [])),
  };
}
