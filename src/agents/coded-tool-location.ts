import { existsSync } from "node:fs";
import path from "node:path";

export type CodedToolLocation =
  | { kind: "module"; file: string; exportName: string }
  /** neuro-san's own coded tools: run by a Python worker, which imports `module` from one of its import roots. */
  | { kind: "python"; file: string; module: string; className: string }
  | { kind: "missing"; tried: string[] };

const MODULE_EXTENSIONS = [".js", ".mjs", ".ts", ".mts"];

/**
 * Dotted identifiers only: `pkg.module.Class` maps to <tool path>/pkg/module.*, so no class can name a file outside the
 * tool path (no `..`, no `/`).
 */
export const CODED_TOOL_CLASS = /^[A-Za-z_][\w-]*(\.[A-Za-z_][\w-]*)*\.[A-Za-z_$][\w$]*$/;

/**
 * Where Python imports coded tools from: the folder holding the tool path (so `coded_tools.math_guy.calculator` is a
 * module, as under neuro-san run from its project), then the project root, as neuro-san's PYTHONPATH would have it.
 */
export function pythonImportRoots(toolPath: string, projectRoot: string): string[] {
  return [...new Set([path.dirname(path.resolve(toolPath)), path.resolve(projectRoot)])];
}

/**
 * Where `class: "calculator.Calculator"` of network `basic/music_nerd_pro` lives, as neuro-san looks for it: the
 * module under `<tool path>/basic/music_nerd_pro/`, then under each folder above it up to the tool path
 * (`coded_tools/basic/calculator.*`, `coded_tools/calculator.*`). The export `Calculator` of a `.js/.mjs/.ts/.mts`
 * module wins over a `.py` one. A class written from an import root (`coded_tools.tools.search.Search`, or
 * `neuro_san_studio.coded_tools.x.X` as neuro-san-studio's toolbox writes them) is a fully qualified module, which
 * neuro-san tries first: a TypeScript one only inside the tool path, a Python one under any import root.
 */
export function locateCodedTool(toolPath: string, network: string, className: string, importRoots = [path.dirname(toolPath)]): CodedToolLocation {
  const parts = className.split(".");
  const exportName = parts.pop()!;
  const toolRoot = path.dirname(toolPath);
  const qualified = importRoots.map((root) => path.join(root, ...parts));
  const networkParts = network.split("/");
  const networkFolders = networkParts.map((_, index) => path.join(toolPath, ...networkParts.slice(0, networkParts.length - index)));
  const byNetwork = [...networkFolders, toolPath].map((folder) => path.join(folder, ...parts));

  const insideToolPath = (file: string) => file.startsWith(toolPath + path.sep);
  const modules = [...qualified.filter(insideToolPath), ...byNetwork].flatMap((base) => MODULE_EXTENSIONS.map((extension) => base + extension));
  const file = modules.find((candidate) => existsSync(candidate));
  if (file !== undefined) return { kind: "module", file, exportName };

  const python = [...qualified.map((base, index) => ({ base, root: importRoots[index]! })), ...byNetwork.map((base) => ({ base, root: toolRoot }))];
  const found = python.find(({ base }) => existsSync(`${base}.py`));
  if (found === undefined) return { kind: "missing", tried: [...modules, ...python.map(({ base }) => `${base}.py`)] };
  const module = path.relative(found.root, found.base).split(path.sep).join(".");
  return { kind: "python", file: `${found.base}.py`, module, className: exportName };
}
