import { readFileSync, realpathSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { Code } from "@connectrpc/connect";
import { AxonError } from "../errors.js";
import { loadConfig } from "../config.js";
import { createLogger } from "../logger.js";
import { runningBuild } from "../project-root.js";
import type { CodedTool } from "./coded-tool.js";
import { locateCodedTool, type CodedToolLocation } from "./coded-tool-location.js";
import { PythonPool, pythonSettingsOf } from "./python/python-pool.js";
import { BUILT_IN_CODED_TOOLS } from "./toolbox/default-toolbox.js";

type CodedToolClass = new () => CodedTool;

/** What a coded tool class resolves to: a TypeScript or JavaScript class, or a Python class a worker runs. */
export type LoadedCodedTool = { kind: "module"; ToolClass: CodedToolClass } | { kind: "python"; tool: PythonToolLocation };

export type PythonToolLocation = Extract<CodedToolLocation, { kind: "python" }>;

/**
 * Finds coded tools under AGENT_TOOL_PATH as neuro-san does (see locateCodedTool) and owns the Python workers that run
 * the `.py` ones.
 */
export class CodedToolLoader {
  private readonly root: string;
  private readonly classes = new Map<string, Promise<LoadedCodedTool>>();
  readonly python: PythonPool;

  constructor(toolPath: string, python?: PythonPool) {
    this.root = path.resolve(toolPath);
    // A runtime made without one (in tests) gets the default pool, which starts no process until a Python tool is called.
    this.python = python ?? new PythonPool(pythonSettingsOf(loadConfig({ AGENT_TOOL_PATH: this.root })), createLogger("silent"));
  }

  load(network: string, className: string): Promise<LoadedCodedTool> {
    const key = `${network}/${className}`;
    let loaded = this.classes.get(key);
    if (!loaded) {
      loaded = this.import(network, className);
      this.classes.set(key, loaded);
      loaded.catch(() => this.classes.delete(key));
    }
    return loaded;
  }

  private async import(network: string, className: string): Promise<LoadedCodedTool> {
    const location = locateCodedTool(this.root, network, className, this.python.importRoots);
    // The worker imports the module with its first call, and again when the file changed.
    if (location.kind === "python") return { kind: "python", tool: location };
    if (location.kind === "missing") {
      const builtIn = BUILT_IN_CODED_TOOLS.get(className);
      if (builtIn !== undefined) return { kind: "module", ToolClass: builtIn };
      throw codedToolError("CODED_TOOL_NOT_FOUND", "no module for the coded tool class", className);
    }
    const { file, exportName } = location;
    // The class grammar keeps paths inside the tool path; a symbolic link must not lead out of it either.
    const real = realpathSync(file);
    if (!real.startsWith(realpathSync(this.root) + path.sep)) {
      throw codedToolError("CODED_TOOL_OUTSIDE_TOOL_PATH", "the coded tool resolves outside the tool path", className);
    }
    const module = (await importModule(real)) as Record<string, unknown>;
    const exported = module[exportName];
    if (typeof exported !== "function") throw codedToolError("CODED_TOOL_NOT_FOUND", "the module does not export the class", className);
    return { kind: "module", ToolClass: exported as CodedToolClass };
  }
}

// Compiled (dist/), the server cannot import a TypeScript tool by itself: tsx's loader is registered for the first one.
let typeScriptLoader: Promise<unknown> | undefined;

/**
 * A tool is loaded as an ES module whatever the nearest package.json says. A `.ts` file outside a `"type": "module"`
 * package (a tool folder without package.json, the usual case) would be taken for CommonJS and, on Node 20.19+, fail
 * with "Cannot require() ES Module ... in a cycle": tsx's own import loads it as a module. JavaScript tools are Node's
 * to load (it detects ES module syntax).
 */
async function importModule(file: string): Promise<unknown> {
  const url = pathToFileURL(file).href;
  if (file.endsWith(".ts") && !inModulePackage(file)) return (await import("tsx/esm/api")).tsImport(url, import.meta.url);
  if (/\.m?ts$/.test(file) && runningBuild) await (typeScriptLoader ??= import("tsx/esm/api").then(({ register }) => register()));
  return import(url);
}

/** Whether the nearest package.json above `file` says `"type": "module"`. */
function inModulePackage(file: string): boolean {
  for (let dir = path.dirname(file); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    let manifest: string;
    try {
      manifest = readFileSync(path.join(dir, "package.json"), "utf8");
    } catch {
      continue;
    }
    try {
      return (JSON.parse(manifest) as { type?: unknown }).type === "module";
    } catch {
      return false;
    }
  }
  return false;
}

function codedToolError(reason: string, message: string, className: string): AxonError {
  return new AxonError(Code.FailedPrecondition, reason, message, { metadata: { class: className } });
}
