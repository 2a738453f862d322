import type { AgentNetwork } from "../agent-network.js";
import type { RegistryProblem } from "../problem.js";
import type { PythonLoadCheck } from "../python/python-check.js";
import { prebuiltMiddlewareOf } from "./catalog.js";

/**
 * What a network's own middleware classes (the ones Axon does not implement) need of the Python interpreter: LangChain,
 * and the class's package. Either missing refuses the network at load, naming it: serving the network without the
 * middleware would skip what it does. Only top-level packages are looked for, as for library tools.
 */
export async function pythonMiddlewareProblems(network: AgentNetwork, python: PythonLoadCheck): Promise<RegistryProblem[]> {
  const entries = [...network.nodes.values()].flatMap((node) => node.middleware.filter((entry) => prebuiltMiddlewareOf(entry.className) === undefined));
  const problems = await Promise.all(
    entries.map(async ({ className, keyPath }): Promise<RegistryProblem | undefined> => {
      const needed = [...new Set(["langchain", className.split(".")[0]!])];
      for (const module of needed) {
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
  return problems.filter((problem) => problem !== undefined);
}
