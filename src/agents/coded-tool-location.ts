import { existsSync } from "node:fs";
import path from "node:path";
import type { AgentNetwork } from "./network.js";
import type { RegistryProblem } from "./problem.js";

export type CodedToolLocation =
  | { kind: "module"; file: string; exportName: string }
  /** neuro-san's own coded tools are Python: found, but not something Axon can run. */
  | { kind: "python"; file: string }
  | { kind: "missing"; tried: string[] };

const MODULE_EXTENSIONS = [".js", ".mjs", ".ts"];

/**
 * Dotted identifiers only: `pkg.module.Class` maps to <tool path>/pkg/module.*, so no class can name a file outside the
 * tool path (no `..`, no `/`).
 */
export const CODED_TOOL_CLASS = /^[A-Za-z_][\w-]*(\.[A-Za-z_][\w-]*)*\.[A-Za-z_$][\w$]*$/;

/**
 * Where `class: "calculator.Calculator"` of network `math_guy` lives: the export `Calculator` of
 * `<tool path>/math_guy/calculator.{js,mjs,ts}`, else `<tool path>/calculator.*`, as neuro-san looks for its `.py`.
 * A class written from the project root (`coded_tools.tools.search.Search`, as neuro-san-studio's toolbox does, with
 * the tool path `coded_tools`) is looked for under the tool path without that first part.
 */
export function locateCodedTool(toolPath: string, network: string, className: string): CodedToolLocation {
  const rootPrefix = `${path.basename(toolPath)}.`;
  const parts = (className.startsWith(rootPrefix) ? className.slice(rootPrefix.length) : className).split(".");
  const exportName = parts.pop()!;
  const modulePath = path.join(...parts);
  const folders = [path.join(toolPath, network), toolPath];
  const candidates = folders.flatMap((folder) => MODULE_EXTENSIONS.map((extension) => path.join(folder, modulePath + extension)));
  const file = candidates.find((candidate) => existsSync(candidate));
  if (file !== undefined) return { kind: "module", file, exportName };
  const python = folders.map((folder) => path.join(folder, `${modulePath}.py`)).find((candidate) => existsSync(candidate));
  return python === undefined ? { kind: "missing", tried: candidates } : { kind: "python", file: python };
}

/** A Python coded tool is reported when the network loads (it is still served: its calls fail with a clear error). */
export function pythonCodedToolWarnings(network: AgentNetwork, toolPath: string): RegistryProblem[] {
  const warnings: RegistryProblem[] = [];
  for (const node of network.nodes.values()) {
    if (node.kind !== "coded_tool" || node.className === undefined) continue;
    const location = locateCodedTool(toolPath, network.name, node.className);
    if (location.kind !== "python") continue;
    warnings.push({
      file: network.file,
      key: `${node.keyPath}.${node.toolbox === undefined ? "class" : "toolbox"}`,
      reason: `${node.className} is a Python module (${location.file}); Axon runs TypeScript and JavaScript coded tools, so calls of ${node.name} will fail`,
      severity: "warning",
    });
  }
  return warnings;
}
