import path from "node:path";
import { locateCodedTool } from "./coded-tool-location.js";
import type { AgentNetwork } from "./network.js";
import type { RegistryProblem } from "./problem.js";
import type { PythonSyntaxCheck } from "./python/python-check.js";
import { BUILT_IN_CODED_TOOLS } from "./toolbox/default-toolbox.js";

/**
 * What the coded tools of a network will fail on, found when it loads (it is still served; their calls fail with a
 * clear error): a class found nowhere, a Python file that does not compile. Returns the Python files too, so a
 * change to one reloads the network.
 */
export async function codedToolProblems(
  network: AgentNetwork,
  toolPath: string,
  importRoots: string[],
  syntax: PythonSyntaxCheck | undefined,
): Promise<{ problems: RegistryProblem[]; files: string[] }> {
  const found = [...network.nodes.values()].flatMap((node) => {
    if (node.kind !== "coded_tool" || node.className === undefined) return [];
    const key = `${node.keyPath}.${node.toolbox === undefined ? "class" : "toolbox"}`;
    return [{ node, key, location: locateCodedTool(toolPath, network.name, node.className, importRoots) }];
  });
  const problems = await Promise.all(
    found.map(async ({ node, key, location }): Promise<RegistryProblem | undefined> => {
      const warning = (reason: string): RegistryProblem => ({ file: network.file, key, reason: `${reason}; calls of ${node.name} will fail`, severity: "warning" });
      if (location.kind === "missing") {
        if (BUILT_IN_CODED_TOOLS.has(node.className!)) return undefined;
        const module = node.className!.split(".").slice(0, -1).join(path.sep);
        return warning(`${node.className} was not found: no ${module}.{py,js,mjs,ts,mts} under ${toolPath} for network ${network.name}`);
      }
      if (location.kind !== "python" || syntax === undefined) return undefined;
      const problem = await syntax.problemOf(location.file);
      if (problem === undefined) return undefined;
      const where = problem.line === undefined ? location.file : `${location.file}:${problem.line}`;
      return warning(`${node.className} cannot load: ${problem.message} (${where})`);
    }),
  );
  return {
    problems: problems.filter((problem) => problem !== undefined),
    files: found.flatMap(({ location }) => (location.kind === "python" ? [location.file] : [])),
  };
}
