import { isJsonObject } from "../json.js";
import type { JsonObject } from "./hocon.js";
import type { RegistryProblem } from "./problem.js";

/** Keys of one agent spec that Axon acts on. */
const AGENT_KEYS = new Set([
  "name",
  "function",
  "instructions",
  "tools",
  "class",
  "llm_config",
  "command",
  "toolbox",
  "args",
  "allow",
  "display_as",
  "max_message_history",
  "structure_formats",
  "middleware",
  "max_steps",
  "max_iterations",
  "max_attempts",
]);

const ALLOW_KEYS = new Set(["connectivity", "to_downstream", "from_downstream", "to_upstream", "reservations"]);
const ALLOW_DIRECTION_KEYS: Record<string, Set<string>> = {
  to_downstream: new Set(["sly_data"]),
  from_downstream: new Set(["sly_data", "messages"]),
  to_upstream: new Set(["sly_data"]),
};

/** neuro-san keys Axon reads past, each with what happens instead. */
const NOT_IMPLEMENTED: Record<string, string> = {
  verbose: "Axon's logging follows LOG_LEVEL alone",
  error_fragments: "answers are not searched for error fragments; they reach the caller as they are",
  request_timeout_seconds: "a chat is bounded by max_execution_seconds and the client's own deadline instead",
  invocation: "Axon reads a front man's invocation from its function block (function.invocation), for the manifest's periodic",
};

/** What only the network's top level sets in Axon, when an agent spec sets it for itself. */
const NETWORK_WIDE = new Set(["max_execution_seconds", "error_formatter"]);

/**
 * What a network file says that Axon does not do: a warning for each key it reads past, naming the key, the network
 * and what happens instead.
 */
export function neuroSanKeyProblems(raw: JsonObject, network: string, file: string): RegistryProblem[] {
  const problems: RegistryProblem[] = [];
  const warn = (key: string, reason: string) => problems.push({ file, key, reason: `network ${network}: ${reason}`, severity: "warning" });

  // Other top-level keys are HOCON definitions that substitutions read (`aaosa_instructions`, say), not settings.
  for (const key of Object.keys(raw)) {
    if (key in NOT_IMPLEMENTED) warn(key, ignored(key));
  }
  const specs = Array.isArray(raw.tools) ? raw.tools : [];
  specs.forEach((spec, index) => {
    if (!isJsonObject(spec)) return;
    const keyPath = `tools[${index}]`;
    for (const key of Object.keys(spec)) {
      if (NETWORK_WIDE.has(key)) warn(`${keyPath}.${key}`, `Axon reads ${key} from the network's top level only; the network's value applies to this agent`);
      else if (!AGENT_KEYS.has(key)) warn(`${keyPath}.${key}`, ignored(key));
    }
    if (!isJsonObject(spec.allow)) return;
    for (const [key, value] of Object.entries(spec.allow)) {
      if (!ALLOW_KEYS.has(key)) warn(`${keyPath}.allow.${key}`, ignored(key));
      const known = ALLOW_DIRECTION_KEYS[key];
      if (known === undefined || !isJsonObject(value)) continue;
      for (const inner of Object.keys(value)) {
        if (!known.has(inner)) warn(`${keyPath}.allow.${key}.${inner}`, ignored(inner));
      }
    }
  });
  return problems;
}

function ignored(key: string): string {
  const instead = NOT_IMPLEMENTED[key];
  return instead === undefined ? `${key} is not a key Axon knows; ignored` : `Axon does not implement ${key}; ${instead}`;
}
