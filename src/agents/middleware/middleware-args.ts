import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { isJsonObject } from "../../json.js";
import type { Middleware } from "../middleware-chain.js";
import type { AgentSpec } from "../agent-network.js";

/** A problem with one argument (`key`), or with the arguments as a whole (`key` empty). */
export interface ArgumentProblem {
  key: string;
  reason: string;
}

/** How one constructor argument is read: a problem with its value, or undefined when it is fine. */
export interface ArgumentRule {
  check(value: JsonValue): string | undefined;
  required?: boolean;
}

/** A LangChain middleware class Axon implements: the arguments its constructor takes, and how it is made. */
export interface PrebuiltMiddleware {
  /** The keyword arguments LangChain's constructor takes that a network file can give. */
  args: Record<string, ArgumentRule>;
  /** Arguments LangChain takes that a network file cannot give (a Python callable, say), each with why. */
  unsupported?: Record<string, string>;
  /** Problems with the arguments taken together. */
  check?(args: JsonObject): ArgumentProblem[];
  /** One instance, for one agent activation; `args` passed `check`; `index` is its place in the agent's list. */
  make(args: JsonObject, agent: AgentSpec, index: number): Middleware;
}

export const boolean: ArgumentRule = { check: (value) => (typeof value === "boolean" ? undefined : "must be true or false") };
export const string: ArgumentRule = { check: (value) => (typeof value === "string" ? undefined : "must be a string") };
export const stringList: ArgumentRule = {
  check: (value) => (Array.isArray(value) && value.every((item) => typeof item === "string") ? undefined : "must be a list of strings"),
};
export const object: ArgumentRule = { check: (value) => (isJsonObject(value) ? undefined : "must be an object") };

export function required(rule: ArgumentRule): ArgumentRule {
  return { ...rule, required: true };
}

export function integer(minimum: number): ArgumentRule {
  return { check: (value) => (typeof value === "number" && Number.isInteger(value) && value >= minimum ? undefined : `must be an integer of at least ${minimum}`) };
}

export function number(minimum: number): ArgumentRule {
  return { check: (value) => (typeof value === "number" && value >= minimum ? undefined : `must be a number of at least ${minimum}`) };
}

export function oneOf(...choices: string[]): ArgumentRule {
  return { check: (value) => (typeof value === "string" && choices.includes(value) ? undefined : `must be one of ${choices.join(", ")}`) };
}

/** `null` stands for Python's None wherever LangChain's default is None. */
export function optional(rule: ArgumentRule): ArgumentRule {
  return { check: (value) => (value === null ? undefined : rule.check(value)) };
}

/** Every problem with `args` for `className`: an argument it does not take, a missing or wrong one. */
export function argumentProblems(className: string, prebuilt: PrebuiltMiddleware, args: JsonObject): ArgumentProblem[] {
  const problems: ArgumentProblem[] = [];
  const takes = Object.keys(prebuilt.args);
  for (const [key, value] of Object.entries(args)) {
    const rule = prebuilt.args[key];
    if (rule !== undefined) {
      const problem = rule.check(value);
      if (problem !== undefined) problems.push({ key, reason: problem });
    } else if (prebuilt.unsupported?.[key] !== undefined) {
      problems.push({ key, reason: `${className} takes ${key} as ${prebuilt.unsupported[key]}, which a network file cannot give` });
    } else {
      problems.push({ key, reason: `is not an argument of ${className}; it takes ${takes.join(", ") || "none"}` });
    }
  }
  for (const [key, rule] of Object.entries(prebuilt.args)) if (rule.required && !(key in args)) problems.push({ key, reason: `is required by ${className}` });
  return problems.length > 0 ? problems : (prebuilt.check?.(args) ?? []);
}
