import type { AgentFunction, AgentNetwork, AgentSpec, AllowPolicy, ExternalTarget, McpServerReference, MiddlewareSpec, NetworkLimits, NodeKind, SlyDataGrant } from "./agent-network.js";
import { CODED_TOOL_CLASS } from "./coded-tool-location.js";
import type { JsonObject, JsonValue } from "./hocon.js";
import { urlReferenceOf } from "./external-urls.js";
import { networkNameProblem } from "./manifest.js";
import { neuroSanKeyProblems } from "./neuro-san-keys.js";
import { RegistryProblemsError, type RegistryProblem } from "./problem.js";
import { SAFE_TOOL_NAME } from "./tool-names.js";
import { DEFAULT_TOOLBOX } from "./toolbox/default-toolbox.js";
import type { Toolbox, ToolboxTool } from "./toolbox/toolbox-info.js";
import { isJsonObject } from "../json.js";

export const DEFAULT_LIMITS: NetworkLimits = Object.freeze({ maxSteps: 10_000, maxAttempts: 3, maxExecutionSeconds: 120 });

const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]/;

export const DEFAULT_DISPLAY_AS: Record<NodeKind, string> = {
  front_man: "llm_agent",
  llm_agent: "llm_agent",
  coded_tool: "coded_tool",
  library_tool: "langchain_tool",
  external_agent: "external_agent",
  mcp_server: "mcp_server",
};

/** A spec with `toolbox` is a tool of the kind its entry says (a library tool when the toolbox has no such entry). */
export function nodeKindOf(spec: { className?: string; toolbox?: ToolboxTool | "missing" } | undefined, isFirst: boolean): NodeKind {
  if (spec === undefined) return "external_agent";
  if (isFirst) return "front_man";
  if (spec.toolbox !== undefined) return spec.toolbox !== "missing" && spec.toolbox.kind === "coded" ? "coded_tool" : "library_tool";
  return spec.className === undefined ? "llm_agent" : "coded_tool";
}

/**
 * An MCP server, by neuro-san's rule: an http(s) URL with `mcp` as a label of its host or a segment of its path
 * (`https://mcp.example.com`, `http://localhost:8000/mcp/`); other URLs are networks on other servers.
 */
export function isMcpServerUrl(reference: string): boolean {
  let url: URL;
  try {
    url = new URL(reference);
  } catch {
    return false;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return false;
  return url.hostname.split(".").includes("mcp") || url.pathname.split("/").includes("mcp");
}

/** `/name` (also `/industry/macys`) or an http(s) URL (see `urlReferenceOf`); anything else is a local name. */
export function externalTargetOf(reference: string): ExternalTarget | undefined {
  if (reference.startsWith("/")) {
    const network = reference.slice(1);
    return networkNameProblem(network) === undefined ? { kind: "same_server", network } : undefined;
  }
  if (!/^https?:\/\//i.test(reference)) return undefined;
  const target = urlReferenceOf(reference);
  if (target === undefined) return undefined;
  return target.kind === "same_server" ? target : { kind: "other_server", url: reference, network: target.network };
}

export interface NetworkSource {
  name: string;
  file: string;
  public: boolean;
  mcp: boolean;
  raw: JsonObject;
  /** What `"toolbox": "<name>"` resolves against: the default, extended by AGENT_TOOLBOX_INFO_FILE and the network's `toolbox_info_file`. */
  toolbox?: Toolbox;
}

/** Validates a parsed network file and models it; throws RegistryProblemsError naming every problem found. */
export function buildNetwork(source: NetworkSource): AgentNetwork {
  const check = new Checker(source.file);
  const raw = applyCommondefs(source.raw, check);
  for (const found of neuroSanKeyProblems(raw, source.name, source.file)) (found.severity === "warning" ? check.warnings : check.problems).push(found);
  const toolbox = source.toolbox ?? DEFAULT_TOOLBOX;

  const specsValue = raw.tools;
  const specEntries: [JsonObject, string][] = [];
  if (!Array.isArray(specsValue) || specsValue.length === 0) {
    check.problem("tools", "must be a non-empty list of agent specs");
  } else {
    specsValue.forEach((spec, index) => {
      if (isJsonObject(spec)) specEntries.push([spec, `tools[${index}]`]);
      else check.problem(`tools[${index}]`, "must be an object");
    });
  }

  const nodes = new Map<string, AgentSpec>();
  specEntries.forEach(([spec, keyPath], index) => {
    const agent = readAgentSpec(spec, keyPath, index === 0 && keyPath === "tools[0]", toolbox, check);
    if (agent === undefined) return;
    if (nodes.has(agent.name)) check.problem(`${keyPath}.name`, `duplicate agent name ${agent.name}`);
    else nodes.set(agent.name, agent);
  });

  for (const agent of [...nodes.values()]) {
    for (const { url } of agent.mcpServers ?? []) addMcpServerNode(nodes, url);
    agent.tools.forEach((reference, index) => {
      if (nodes.has(reference) && nodes.get(reference)?.kind !== "external_agent") return;
      const target = externalTargetOf(reference);
      if (target === undefined) {
        check.problem(`${agent.keyPath}.tools[${index}]`, `refers to undefined agent ${reference}`);
      } else {
        addExternalNode(nodes, reference, target);
      }
    });
    // Coded tools that call agents name them in args.tools; only well-formed external references become nodes here.
    for (const reference of argsToolsOf(agent)) {
      const target = nodes.has(reference) ? undefined : externalTargetOf(reference);
      if (target !== undefined) addExternalNode(nodes, reference, target);
    }
  }

  const metadata = check.optionalObject(raw, "metadata") ?? {};
  const description = check.optionalString(metadata, "description", "metadata.description") ?? "";
  const tags = check.optionalStringList(metadata, "tags", "metadata.tags") ?? [];
  const llmConfig = check.optionalObject(raw, "llm_config") ?? {};
  const { maxSteps, maxAttempts } = readRunLimits(raw, "", check);
  const maxExecutionSeconds = check.optionalNumber(raw, "max_execution_seconds", { minimum: Number.MIN_VALUE });
  const errorFormatter = check.optionalString(raw, "error_formatter");
  if (errorFormatter !== undefined && errorFormatter !== "string" && errorFormatter !== "json") {
    check.problem("error_formatter", "must be string or json");
  }
  const errorFragments = check.optionalStringList(raw, "error_fragments") ?? [];
  const verbose = raw.verbose;
  if (verbose !== undefined && typeof verbose !== "boolean" && typeof verbose !== "string") {
    check.problem("verbose", "must be a boolean or a string");
  }
  const llmInfoFile = check.optionalString(raw, "llm_info_file");

  const frontMan = [...nodes.values()][0];
  if (check.problems.length > 0 || frontMan === undefined) throw new RegistryProblemsError(check.problems);

  return deepFreeze({
    name: source.name,
    file: source.file,
    public: source.public,
    mcp: source.mcp,
    metadata,
    description,
    tags,
    frontMan,
    nodes,
    llmConfig,
    limits: {
      maxSteps: maxSteps ?? DEFAULT_LIMITS.maxSteps,
      maxAttempts: maxAttempts ?? DEFAULT_LIMITS.maxAttempts,
      maxExecutionSeconds: maxExecutionSeconds ?? DEFAULT_LIMITS.maxExecutionSeconds,
    },
    ...(errorFormatter === "string" || errorFormatter === "json" ? { errorFormatter } : {}),
    errorFragments,
    ...(typeof verbose === "boolean" || typeof verbose === "string" ? { verbose } : {}),
    ...(llmInfoFile === undefined ? {} : { llmInfoFile }),
    raw,
    warnings: check.warnings,
  });
}

/** `args.tools` as a list of names: coded tools that delegate to agents name them there. */
export function argsToolsOf(agent: AgentSpec): string[] {
  const tools = agent.args?.tools;
  if (typeof tools === "string") return [tools];
  if (Array.isArray(tools)) return tools.filter((tool): tool is string => typeof tool === "string");
  return [];
}

/** One node per MCP server, for Connectivity; which of its tools an agent may use is the agent's `mcpServers`. */
function addMcpServerNode(nodes: Map<string, AgentSpec>, url: string): void {
  if (nodes.has(url)) return;
  nodes.set(url, { name: url, kind: "mcp_server", tools: [], displayAs: DEFAULT_DISPLAY_AS.mcp_server, structureFormats: [], middleware: [], raw: {} });
}

function addExternalNode(nodes: Map<string, AgentSpec>, reference: string, target: ExternalTarget): void {
  if (nodes.has(reference)) return;
  nodes.set(reference, {
    name: reference,
    kind: "external_agent",
    tools: [],
    displayAs: DEFAULT_DISPLAY_AS.external_agent,
    structureFormats: [],
    middleware: [],
    external: target,
    raw: {},
  });
}

function readAgentSpec(spec: JsonObject, keyPath: string, isFirst: boolean, toolbox: Toolbox, check: Checker): AgentSpec | undefined {
  const name = check.optionalString(spec, "name", `${keyPath}.name`);
  if (name === undefined) {
    if (spec.name === undefined) check.problem(`${keyPath}.name`, "is required");
    return undefined;
  }
  if (name === "" || name.startsWith("/") || CONTROL_CHARACTERS.test(name)) {
    check.problem(`${keyPath}.name`, "must be a non-empty name, without control characters, not starting with /");
    return undefined;
  }
  if (!SAFE_TOOL_NAME.test(name)) {
    check.warning(`${keyPath}.name`, "has characters LLM tool names do not allow; LLMs see them replaced by _");
  }

  const ownClass = check.optionalString(spec, "class", `${keyPath}.class`);
  if (ownClass !== undefined && !CODED_TOOL_CLASS.test(ownClass)) {
    check.problem(`${keyPath}.class`, "must be module.ClassName, with dotted identifiers only");
  }
  if (isFirst && ownClass !== undefined) check.problem(`${keyPath}.class`, "the front man cannot be a coded tool");
  const toolboxName = check.optionalString(spec, "toolbox", `${keyPath}.toolbox`);
  const toolboxTool = toolboxName === undefined ? undefined : (toolbox.get(toolboxName) ?? "missing");
  const kind = nodeKindOf({ ...(ownClass === undefined ? {} : { className: ownClass }), ...(toolboxTool === undefined ? {} : { toolbox: toolboxTool }) }, isFirst);

  const { tools, mcpServers } = readTools(spec, keyPath, check);
  if (toolboxName !== undefined) {
    // neuro-san: a toolbox tool runs code, never an LLM, so it can neither front a network nor call tools.
    if (isFirst) check.problem(`${keyPath}.toolbox`, "the front man cannot be a toolbox tool: there is no valid front man");
    if (tools.length > 0) check.problem(`${keyPath}.tools`, "a toolbox tool cannot have tools");
    if (toolboxTool === "missing") check.warning(`${keyPath}.toolbox`, `${toolboxName} is not in the toolbox; calls of ${name} will fail`);
  }
  const structureFormatsValue = spec.structure_formats;
  const structureFormats =
    typeof structureFormatsValue === "string"
      ? [structureFormatsValue]
      : (check.optionalStringList(spec, "structure_formats", `${keyPath}.structure_formats`) ?? []);

  const functionBlock = check.optionalObject(spec, "function", `${keyPath}.function`);
  const allowBlock = check.optionalObject(spec, "allow", `${keyPath}.allow`);
  const instructions = check.optionalString(spec, "instructions", `${keyPath}.instructions`);
  const command = check.optionalString(spec, "command", `${keyPath}.command`);
  const ownArgs = check.optionalObject(spec, "args", `${keyPath}.args`);
  const llmConfig = check.optionalObject(spec, "llm_config", `${keyPath}.llm_config`);
  const displayAs = check.optionalString(spec, "display_as", `${keyPath}.display_as`);
  const maxMessageHistory = check.optionalNumber(spec, "max_message_history", {
    keyPath: `${keyPath}.max_message_history`,
    integer: true,
    minimum: 0,
  });

  const middleware = readMiddleware(spec, keyPath, check);
  if (middleware.length > 0 && kind !== "front_man" && kind !== "llm_agent") {
    check.problem(`${keyPath}.middleware`, "middleware wraps the runs of an LLM agent; this agent is a tool that calls no LLM");
  }
  const { maxSteps, maxAttempts } = readRunLimits(spec, `${keyPath}.`, check);

  // A toolbox entry supplies the class, its display_as, and for a coded tool its description; the spec's own win.
  const entry = toolboxTool === "missing" ? undefined : toolboxTool;
  const className = entry?.className ?? ownClass;
  const args = entry?.kind === "library" ? { ...entry.args, ...ownArgs } : ownArgs;
  const fn =
    functionBlock !== undefined
      ? readFunction(functionBlock, `${keyPath}.function`, check)
      : entry?.kind === "coded"
        ? { description: entry.description, ...(entry.parameters === undefined ? {} : { parameters: entry.parameters }) }
        : undefined;

  return {
    name,
    kind,
    keyPath,
    ...(fn === undefined ? {} : { function: fn }),
    ...(instructions === undefined ? {} : { instructions }),
    ...(command === undefined ? {} : { command }),
    tools,
    ...(mcpServers.length === 0 ? {} : { mcpServers }),
    ...(className === undefined ? {} : { className }),
    ...(toolboxName === undefined ? {} : { toolbox: toolboxName }),
    ...(args === undefined ? {} : { args }),
    ...(llmConfig === undefined ? {} : { llmConfig }),
    ...(allowBlock === undefined ? {} : { allow: readAllow(allowBlock, `${keyPath}.allow`, check) }),
    displayAs: displayAs ?? entry?.displayAs ?? DEFAULT_DISPLAY_AS[kind],
    ...(maxMessageHistory === undefined ? {} : { maxMessageHistory }),
    structureFormats,
    middleware,
    ...(maxSteps === undefined && maxAttempts === undefined
      ? {}
      : { limits: { ...(maxSteps === undefined ? {} : { maxSteps }), ...(maxAttempts === undefined ? {} : { maxAttempts }) } }),
    raw: spec,
  };
}

/** `max_steps` (or its older name `max_iterations`, which it wins over) and `max_attempts`, at either level. */
function readRunLimits(container: JsonObject, prefix: string, check: Checker): { maxSteps?: number; maxAttempts?: number } {
  const rule = (key: string) => ({ keyPath: `${prefix}${key}`, integer: true, minimum: 1 });
  const maxSteps = check.optionalNumber(container, "max_steps", rule("max_steps")) ?? check.optionalNumber(container, "max_iterations", rule("max_iterations"));
  const maxAttempts = check.optionalNumber(container, "max_attempts", rule("max_attempts"));
  return { ...(maxSteps === undefined ? {} : { maxSteps }), ...(maxAttempts === undefined ? {} : { maxAttempts }) };
}

/**
 * `middleware`: a list of `{class, args, allow}`, in the order they wrap the agent. Their arguments are checked against the
 * classes when the network loads (middleware/middleware-problems.ts), not here: the classes stand above the agents.
 */
function readMiddleware(spec: JsonObject, keyPath: string, check: Checker): MiddlewareSpec[] {
  const value = spec.middleware;
  if (value === undefined) return [];
  if (!Array.isArray(value)) {
    check.problem(`${keyPath}.middleware`, "must be a list of {class, args} objects");
    return [];
  }
  return value.flatMap((entry, index) => {
    const entryPath = `${keyPath}.middleware[${index}]`;
    if (!isJsonObject(entry)) {
      check.problem(entryPath, "must be a {class, args} object");
      return [];
    }
    const className = check.optionalString(entry, "class", `${entryPath}.class`);
    const args = check.optionalObject(entry, "args", `${entryPath}.args`) ?? {};
    const allowReservations = readMiddlewareAllow(entry, entryPath, check);
    for (const key of Object.keys(entry)) if (!MIDDLEWARE_KEYS.has(key)) check.problem(`${entryPath}.${key}`, "is not a middleware key: only class, args and allow are");
    if (className === undefined) {
      if (entry.class === undefined) check.problem(`${entryPath}.class`, "is required: the fully qualified name of an AgentMiddleware class");
      return [];
    }
    if (!CODED_TOOL_CLASS.test(className) || !className.includes(".")) {
      check.problem(`${entryPath}.class`, "must be a fully qualified class name, package.module.ClassName");
      return [];
    }
    return [{ className, args, allowReservations, keyPath: entryPath }];
  });
}

const MIDDLEWARE_KEYS = new Set(["class", "args", "allow"]);

/** A middleware entry's `allow`: only `reservations`, which gives its class neuro-san's `reservationist` special arg. */
function readMiddlewareAllow(entry: JsonObject, entryPath: string, check: Checker): boolean {
  const allow = check.optionalObject(entry, "allow", `${entryPath}.allow`);
  if (allow === undefined) return false;
  for (const key of Object.keys(allow)) if (key !== "reservations") check.problem(`${entryPath}.allow.${key}`, "is not a middleware allow key: only reservations is");
  const reservations = allow.reservations ?? false;
  if (typeof reservations !== "boolean") check.problem(`${entryPath}.allow.reservations`, "must be true or false");
  return reservations === true;
}

/**
 * `tools`: names of agents, `/network` and URL references, and MCP servers, either as a URL (see `isMcpServerUrl`)
 * or as `{url, tools: [allowed tool names]}` (absent or null `tools`: all of the server's).
 */
function readTools(spec: JsonObject, keyPath: string, check: Checker): { tools: string[]; mcpServers: McpServerReference[] } {
  const value = spec.tools;
  const tools: string[] = [];
  const mcpServers: McpServerReference[] = [];
  if (value === undefined) return { tools, mcpServers };
  if (!Array.isArray(value)) {
    check.problem(`${keyPath}.tools`, "must be a list of tool names, URLs or {url, tools} objects");
    return { tools, mcpServers };
  }
  value.forEach((item, index) => {
    const itemPath = `${keyPath}.tools[${index}]`;
    if (typeof item === "string") {
      tools.push(item);
      if (isMcpServerUrl(item)) mcpServers.push({ url: item });
      return;
    }
    const url = isJsonObject(item) ? item.url : undefined;
    if (typeof url !== "string" || !/^https?:\/\//i.test(url)) {
      check.problem(itemPath, "must be a tool name, a URL or {url, tools} with an http(s) url");
      return;
    }
    const extra = Object.keys(item as JsonObject).filter((key) => key !== "url" && key !== "tools");
    if (extra.length > 0) {
      check.warning(itemPath, `only url and tools are read here (headers come from the MCP info file); ignored ${extra.join(", ")}`);
    }
    const allowed = (item as JsonObject).tools;
    if (allowed !== undefined && allowed !== null && !(Array.isArray(allowed) && allowed.every((tool) => typeof tool === "string"))) {
      check.problem(`${itemPath}.tools`, "must be a list of the server's tool names, or null for all of them");
      return;
    }
    tools.push(url);
    mcpServers.push({ url, ...(Array.isArray(allowed) ? { allowedTools: allowed as string[] } : {}) });
  });
  return { tools, mcpServers };
}

function readFunction(block: JsonObject, keyPath: string, check: Checker): AgentFunction {
  const description = check.optionalString(block, "description", `${keyPath}.description`);
  const parameters = check.optionalObject(block, "parameters", `${keyPath}.parameters`);
  const slyDataSchema = check.optionalObject(block, "sly_data_schema", `${keyPath}.sly_data_schema`);
  const slyDataOutputSchema = check.optionalObject(block, "sly_data_output_schema", `${keyPath}.sly_data_output_schema`);
  return {
    ...(description === undefined ? {} : { description }),
    ...(parameters === undefined ? {} : { parameters }),
    ...(slyDataSchema === undefined ? {} : { slyDataSchema }),
    ...(slyDataOutputSchema === undefined ? {} : { slyDataOutputSchema }),
  };
}

function readAllow(block: JsonObject, keyPath: string, check: Checker): AllowPolicy {
  const connectivity = block.connectivity ?? true;
  if (typeof connectivity !== "boolean") check.problem(`${keyPath}.connectivity`, "must be true or false");
  const policy: AllowPolicy = { connectivity: connectivity !== false };
  const directions = [
    ["to_downstream", "toDownstream"],
    ["from_downstream", "fromDownstream"],
    ["to_upstream", "toUpstream"],
  ] as const;
  const messages = readMessagesGrant(check.optionalObject(block, "from_downstream", `${keyPath}.from_downstream`)?.messages);
  if (messages === "invalid") {
    check.problem(`${keyPath}.from_downstream.messages`, "must be true, false, an agent reference, a list of them or a map of them to true or false");
  } else if (messages !== undefined) {
    policy.messagesFrom = messages;
  }
  for (const [key, field] of directions) {
    const direction = check.optionalObject(block, key, `${keyPath}.${key}`);
    if (direction?.sly_data === undefined) continue;
    const grant = readGrant(direction.sly_data);
    if (grant === undefined) {
      check.problem(`${keyPath}.${key}.sly_data`, "must be true, false, a list of keys or a map of key to true, false or a new name");
    } else {
      policy[field] = grant;
    }
  }
  return policy;
}

/** neuro-san's forms: a boolean, one reference, a list of them, or a map of them to booleans. */
function readMessagesGrant(value: JsonValue | undefined): true | string[] | undefined | "invalid" {
  if (value === undefined || value === false) return undefined;
  if (value === true) return true;
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.every((item) => typeof item === "string") ? (value as string[]) : "invalid";
  if (isJsonObject(value)) {
    const entries = Object.entries(value);
    if (!entries.every(([, on]) => typeof on === "boolean")) return "invalid";
    return entries.filter(([, on]) => on).map(([reference]) => reference);
  }
  return "invalid";
}

function readGrant(value: JsonValue): SlyDataGrant | undefined {
  if (typeof value === "boolean") return value;
  if (Array.isArray(value)) return value.every((key) => typeof key === "string") ? (value as string[]) : undefined;
  if (isJsonObject(value)) {
    const entries = Object.entries(value);
    if (entries.every(([, rule]) => typeof rule === "boolean" || typeof rule === "string")) {
      return value as Record<string, boolean | string>;
    }
  }
  return undefined;
}

/**
 * `commondefs.replacement_values`: a string equal to a key becomes that value; `commondefs.replacement_strings`:
 * `{key}` inside any string becomes the string. Applies to everything but `commondefs` itself; other braces are left as
 * they are (instructions often hold JSON examples).
 */
function applyCommondefs(raw: JsonObject, check: Checker): JsonObject {
  const commondefs = check.optionalObject(raw, "commondefs");
  if (commondefs === undefined) return raw;
  const values = check.optionalObject(commondefs, "replacement_values", "commondefs.replacement_values") ?? {};
  const strings = check.optionalObject(commondefs, "replacement_strings", "commondefs.replacement_strings") ?? {};
  const stringReplacements = new Map<string, string>();
  for (const [key, value] of Object.entries(strings)) {
    if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") {
      stringReplacements.set(key, String(value));
    } else {
      check.problem(`commondefs.replacement_strings.${key}`, "must be a string, number or boolean");
    }
  }
  const placeholder =
    stringReplacements.size === 0
      ? undefined
      : new RegExp(`\\{(${[...stringReplacements.keys()].map(escapeRegExp).join("|")})\\}`, "g");

  // A replacement value gets the string replacements too, but never another replacement value: no loops.
  const replace = (value: JsonValue, withValues: boolean): JsonValue => {
    if (typeof value === "string") {
      if (withValues && Object.hasOwn(values, value)) return replace(values[value] as JsonValue, false);
      return placeholder === undefined ? value : value.replace(placeholder, (_, key: string) => stringReplacements.get(key) ?? "");
    }
    if (Array.isArray(value)) return value.map((element) => replace(element, withValues));
    if (isJsonObject(value)) {
      const copy: JsonObject = {};
      for (const [key, child] of Object.entries(value)) copy[key] = replace(child, withValues);
      return copy;
    }
    return value;
  };

  const result: JsonObject = {};
  for (const [key, value] of Object.entries(raw)) result[key] = key === "commondefs" ? value : replace(value, true);
  return result;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** Reads optional typed keys, collecting a problem (file, key path, reason) for each one of the wrong type. */
class Checker {
  readonly problems: RegistryProblem[] = [];
  readonly warnings: RegistryProblem[] = [];
  constructor(private readonly file: string) {}

  problem(key: string, reason: string): void {
    this.problems.push({ file: this.file, key, reason });
  }

  warning(key: string, reason: string): void {
    this.warnings.push({ file: this.file, key, reason, severity: "warning" });
  }

  optionalObject(container: JsonObject, key: string, keyPath = key): JsonObject | undefined {
    const value = container[key];
    if (value === undefined) return undefined;
    if (isJsonObject(value)) return value;
    this.problem(keyPath, "must be an object");
    return undefined;
  }

  optionalString(container: JsonObject, key: string, keyPath = key): string | undefined {
    const value = container[key];
    if (value === undefined) return undefined;
    if (typeof value === "string") return value;
    this.problem(keyPath, "must be a string");
    return undefined;
  }

  optionalStringList(container: JsonObject, key: string, keyPath = key): string[] | undefined {
    const value = container[key];
    if (value === undefined) return undefined;
    if (Array.isArray(value) && value.every((element) => typeof element === "string")) return value as string[];
    this.problem(keyPath, "must be a list of strings");
    return undefined;
  }

  optionalNumber(
    container: JsonObject,
    key: string,
    rules: { keyPath?: string; integer?: boolean; minimum?: number } = {},
  ): number | undefined {
    const value = container[key];
    const keyPath = rules.keyPath ?? key;
    if (value === undefined) return undefined;
    if (typeof value !== "number" || (rules.integer && !Number.isInteger(value))) {
      this.problem(keyPath, rules.integer ? "must be an integer" : "must be a number");
      return undefined;
    }
    if (rules.minimum !== undefined && value < rules.minimum) {
      this.problem(keyPath, rules.minimum === Number.MIN_VALUE ? "must be positive" : `must be at least ${rules.minimum}`);
      return undefined;
    }
    return value;
  }
}

/** Networks are shared by every request: freeze them so no request can change another's view. */
function deepFreeze<T>(value: T): T {
  if (value instanceof Map) {
    for (const entry of value.values()) deepFreeze(entry);
    // A frozen Map can still be mutated through set/delete; callers see it as ReadonlyMap.
    return Object.freeze(value);
  }
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
