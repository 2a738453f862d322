import { CODED_TOOL_CLASS } from "../coded-tool-location.js";
import type { JsonObject } from "../hocon.js";
import type { RegistryProblem } from "../problem.js";
import { isJsonObject } from "../../json.js";

/**
 * A tool an agent spec names with `"toolbox": "<name>"`, from a toolbox info file. An entry with a `description` is a
 * coded tool (`module.ClassName` under AGENT_TOOL_PATH, described by the entry); any other is a library tool (a
 * LangChain class in neuro-san, one of Axon's built-in implementations here), configured by its `args`.
 */
export type ToolboxTool =
  | { kind: "library"; className: string; args: JsonObject; displayAs?: string }
  | { kind: "coded"; className: string; description: string; parameters?: JsonObject; displayAs?: string };

export type Toolbox = ReadonlyMap<string, ToolboxTool>;

/**
 * A toolbox info file: tool name -> entry. Each entry replaces one of the same name in the toolbox it extends; a bad
 * entry is a warning and is skipped, so the rest of the file still counts.
 */
export function readToolboxInfo(raw: JsonObject, file: string, extending: Toolbox = new Map()): { value: Toolbox; problems: RegistryProblem[] } {
  const toolbox = new Map(extending);
  const problems: RegistryProblem[] = [];
  for (const [name, entry] of Object.entries(raw)) {
    const tool = toolOf(entry);
    if (typeof tool === "string") problems.push({ file, key: name, reason: tool, severity: "warning" });
    else toolbox.set(name, tool);
  }
  return { value: toolbox, problems };
}

function toolOf(entry: unknown): ToolboxTool | string {
  if (!isJsonObject(entry)) return "must be an object with a class";
  const { class: className, args, description, parameters, display_as: displayAs } = entry;
  if (typeof className !== "string" || className === "") return "class must be a non-empty string";
  if (displayAs !== undefined && typeof displayAs !== "string") return "display_as must be a string";
  const shown = displayAs === undefined ? {} : { displayAs };
  if (description !== undefined) {
    if (typeof description !== "string") return "description must be a string";
    if (!CODED_TOOL_CLASS.test(className)) return "a coded tool's class must be module.ClassName, with dotted identifiers only";
    if (parameters !== undefined && !isJsonObject(parameters)) return "parameters must be an object";
    return { kind: "coded", className, description, ...(parameters === undefined ? {} : { parameters }), ...shown };
  }
  if (args !== undefined && !isJsonObject(args)) return "args must be an object";
  return { kind: "library", className, args: args ?? {}, ...shown };
}
