import { readFileSync, realpathSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { AxonError } from "../errors.js";
import { ChatMessage_ChatMessageType as MessageType, type Origin } from "../gen/neuro_san/api/grpc/chat_pb.js";
import { loadConfig } from "../config.js";
import { createLogger } from "../logger.js";
import { runningBuild } from "../project-root.js";
import { runReported, type Activation, type ToolCall } from "./activation.js";
import { locateCodedTool, type CodedToolLocation } from "./coded-tool-location.js";
import { PythonPool, pythonSettingsOf } from "./python/python-pool.js";
import { PythonToolError, type SlyDataChanges } from "./python/python-worker.js";
import { nonJsonValueIn, restoreNonJsonKeys } from "./json-values.js";
import { BUILT_IN_CODED_TOOLS } from "./toolbox/default-toolbox.js";
import type { ChatSession } from "./chat-session.js";
import type { AgentSpec } from "./network.js";

/** What a coded tool gets besides its arguments and the request's sly_data. */
export interface CodedToolContext {
  /** Streams an AGENT_PROGRESS message with this structure. */
  reportProgress(structure: JsonObject): void;
  /** Forwarded request metadata (request_id, user_id, ...). */
  metadata: Record<string, string>;
  /** Aborted when the chat is cancelled: long work should stop. */
  signal: AbortSignal;
}

/** A coded tool class: `asyncInvoke` is preferred; `invoke` may also return a promise. */
export interface CodedTool {
  asyncInvoke?(args: JsonObject, slyData: JsonObject, context: CodedToolContext): unknown;
  invoke?(args: JsonObject, slyData: JsonObject): unknown;
}

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

/**
 * A coded tool called by an LLM: static `args` override the LLM's; it may read and write sly_data. What it returns,
 * writes to sly_data or reports as progress must be JSON: anything else (NaN, Infinity, a Date...) fails the call with
 * an error naming the value, and sly_data keeps its previous value for that key.
 */
export class CodedToolActivation implements Activation {
  constructor(
    private readonly session: ChatSession,
    private readonly spec: AgentSpec,
  ) {}

  invoke(llmArgs: JsonObject, { origin }: ToolCall): Promise<string> {
    const { session, spec } = this;
    const args = { ...llmArgs, ...spec.args };
    return runReported(session, origin, args, async () => {
      const loaded = await session.services.codedTools.load(session.network.name, spec.className!);
      // Loading a module spans turns of the event loop: a chat cancelled meanwhile must not run the tool.
      session.signal.throwIfAborted();
      if (loaded.kind === "python") return runPythonTool(session, loaded.tool, args, origin);
      const tool = new loaded.ToolClass();
      const context: CodedToolContext = {
        reportProgress: (structure) => {
          const problem = nonJsonValueIn(structure, "the progress");
          if (problem !== undefined) throw notJson(`reported progress JSON cannot carry: ${problem}`);
          session.emit({ type: MessageType.AGENT_PROGRESS, origin, structure });
        },
        metadata: session.metadata,
        signal: session.signal,
      };
      const slyDataBefore = structuredClone(session.slyData);
      const outcome = await Promise.resolve()
        .then(() => (tool.asyncInvoke ? tool.asyncInvoke(args, session.slyData, context) : tool.invoke?.(args, session.slyData)))
        .then((value: unknown) => ({ value }), (error: unknown) => ({ error }));
      // Even a tool that failed may have written sly_data: what is not JSON never stays.
      const written = restoreNonJsonKeys(session.slyData, slyDataBefore);
      if ("error" in outcome) throw outcome.error;
      if (written !== undefined) throw notJson(`wrote a value JSON cannot carry, which was not kept: ${written}`);
      const returned = typeof outcome.value === "string" ? undefined : nonJsonValueIn(outcome.value ?? null, "the result");
      if (returned !== undefined) throw notJson(`returned a value JSON cannot carry: ${returned}`);
      return typeof outcome.value === "string" ? outcome.value : JSON.stringify((outcome.value ?? null) as JsonValue);
    });
  }
}

/**
 * A Python coded tool, run by the request's Python worker as neuro-san runs it: `origin` added to its arguments when
 * the caller did not set it, sly_data as the chat has it now, the changes it made applied to the chat's dict even when
 * it raised. Its exception is a tool error with the type and message; the traceback goes to the log with the failure.
 */
async function runPythonTool(session: ChatSession, tool: PythonToolLocation, args: JsonObject, origin: Origin[]): Promise<string> {
  const { module, file, className } = tool;
  const toolArgs = { origin: origin.map((step) => ({ tool: step.tool, instantiation_index: step.instantiationIndex })), ...args };
  const progress = (structure: JsonObject) => session.emit({ type: MessageType.AGENT_PROGRESS, origin, structure });
  try {
    const answer = await session.request.python.call(session.slyData, { module, file, className, args: toolArgs }, progress, session.signal);
    applySlyDataChanges(session.slyData, answer.slyData);
    return answer.result;
  } catch (error) {
    if (error instanceof PythonToolError) applySlyDataChanges(session.slyData, error.slyData);
    throw error;
  }
}

function applySlyDataChanges(slyData: JsonObject, changes: SlyDataChanges): void {
  for (const key of changes.delete) delete slyData[key];
  Object.assign(slyData, changes.set);
}

function notJson(message: string): AxonError {
  return new AxonError(Code.InvalidArgument, "CODED_TOOL_NOT_JSON", `the coded tool ${message}`);
}
