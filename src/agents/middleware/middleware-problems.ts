import type { AgentNetwork } from "../agent-network.js";
import type { RegistryProblem } from "../problem.js";
import type { PythonLoadCheck } from "../python/python-check.js";
import { middlewareArgumentProblems, prebuiltMiddlewareOf } from "./catalog.js";

/**
 * What refuses a network for its middleware, found when it loads: an argument a class Axon runs does not take, or a
 * value it cannot use; for a network's own classes, which run in Python, LangChain or the class's package missing
 * from the interpreter (when one is there to ask). Serving the network without its middleware would skip what it does.
 */
export async function middlewareProblems(network: AgentNetwork, python: PythonLoadCheck | undefined): Promise<RegistryProblem[]> {
  const entries = [...network.nodes.values()].flatMap((node) => node.middleware);
  const argumentProblems = entries.flatMap(({ className, args, keyPath }) =>
    middlewareArgumentProblems(className, args).map(({ key, reason }) => ({ file: network.file, key: key === "" ? `${keyPath}.args` : `${keyPath}.args.${key}`, reason })),
  );
  if (argumentProblems.length > 0 || python === undefined) return argumentProblems;
  const pythonProblems = await Promise.all(
    entries
      .filter((entry) => prebuiltMiddlewareOf(entry.className) === undefined)
      .map(async ({ className, keyPath }): Promise<RegistryProblem | undefined> => {
        // Only top-level packages are looked for, as for library tools: finding `a.b` would import `a`.
        for (const module of new Set(["langchain", className.split(".")[0]!])) {
          const problem = await python.moduleProblem(module);
          if (problem === undefined) continue;
          const what = module === "langchain" ? "LangChain (the langchain package), which its AgentMiddleware classes need" : `its package ${module}`;
          return {
            file: network.file,
            key: `${keyPath}.class`,
            reason: `network ${network.name} is not served: its middleware ${className} runs in Python, which lacks ${what}: ${problem.message}; install it into the interpreter AXON_PYTHON names, or set AXON_PYTHON to one that has it`,
          };
        }
        return undefined;
      }),
  );
  return pythonProblems.filter((problem) => problem !== undefined);
}
