import type { JsonObject } from "@bufbuild/protobuf";
import { isJsonObject } from "../json.js";

/**
 * An LLM info file (`AGENT_LLM_INFO_FILE`, a network's `llm_info_file`), as neuro-san documents it: model names
 * (each with its `class` and the name to `use_model_name` instead), `classes` (each `extends` another and gives
 * default `args`), and a `default_config` under every llm_config. It extends Axon's own table (`model-names.ts`);
 * the other keys of an entry (context window, prices, dates) describe the model and change nothing here.
 */
export interface LlmInfo {
  models: ReadonlyMap<string, { className?: string; useModelName?: string }>;
  classes: ReadonlyMap<string, { extends?: string; args: JsonObject }>;
  defaultConfig: JsonObject;
}

export const EMPTY_LLM_INFO: LlmInfo = Object.freeze({ models: new Map(), classes: new Map(), defaultConfig: {} });

/** `use_model_name` and `extends` chains longer than this are loops. */
const MAX_CHAIN = 16;

/**
 * An info file's entries over the ones it extends (the server's file, for a network's own). A bad entry is reported
 * by key and skipped; `factories` (Python classes) cannot be used and is reported too.
 */
export function readLlmInfo(raw: JsonObject, extending: LlmInfo = EMPTY_LLM_INFO): { value: LlmInfo; problems: { key: string; reason: string }[] } {
  const models = new Map(extending.models);
  const classes = new Map(extending.classes);
  let defaultConfig = extending.defaultConfig;
  const problems: { key: string; reason: string }[] = [];
  for (const [name, entry] of Object.entries(raw)) {
    if (name === "default_config") {
      if (isJsonObject(entry)) defaultConfig = { ...defaultConfig, ...entry };
      else problems.push({ key: name, reason: "must be an object" });
    } else if (name === "classes") {
      if (!isJsonObject(entry)) {
        problems.push({ key: name, reason: "must be an object" });
        continue;
      }
      for (const [className, classEntry] of Object.entries(entry)) {
        const key = `classes.${className}`;
        if (className === "factories") {
          problems.push({ key, reason: "names Python LLM factories, which Axon cannot run; their classes are unknown to it" });
        } else if (!isJsonObject(classEntry)) {
          problems.push({ key, reason: "must be an object" });
        } else if (classEntry["extends"] !== undefined && typeof classEntry["extends"] !== "string") {
          problems.push({ key: `${key}.extends`, reason: "must be a class name" });
        } else if (classEntry["args"] !== undefined && classEntry["args"] !== null && !isJsonObject(classEntry["args"])) {
          problems.push({ key: `${key}.args`, reason: "must be an object" });
        } else {
          const args = isJsonObject(classEntry["args"]) ? classEntry["args"] : {};
          const base = classEntry["extends"];
          classes.set(className, { ...(typeof base === "string" ? { extends: base } : {}), args });
        }
      }
    } else if (!isJsonObject(entry)) {
      problems.push({ key: name, reason: "must be an object describing the model" });
    } else {
      const { class: className, use_model_name: useModelName } = entry;
      if (className !== undefined && typeof className !== "string") problems.push({ key: `${name}.class`, reason: "must be a string" });
      else if (useModelName !== undefined && typeof useModelName !== "string") problems.push({ key: `${name}.use_model_name`, reason: "must be a string" });
      else models.set(name, { ...(className === undefined ? {} : { className }), ...(useModelName === undefined ? {} : { useModelName }) });
    }
  }
  return { value: { models, classes, defaultConfig }, problems };
}

/** A model name followed through the file's `use_model_name` chain: the first `class` met, and the last name. */
export function modelInInfo(info: LlmInfo, name: string): { className?: string; name: string } {
  let className: string | undefined;
  let current = name;
  for (let step = 0; step < MAX_CHAIN; step++) {
    const entry = info.models.get(current);
    if (entry === undefined) break;
    className ??= entry.className;
    if (entry.useModelName === undefined || entry.useModelName === current) break;
    current = entry.useModelName;
  }
  return { ...(className === undefined ? {} : { className }), name: current };
}

/**
 * A class the file defines: the class it finally extends (one Axon knows, or not) and its default args, the base's
 * first. Null args are neuro-san's "not set" and are left out.
 */
export function classInInfo(info: LlmInfo, className: string): { base: string; args: JsonObject } | undefined {
  if (!info.classes.has(className)) return undefined;
  const chain: JsonObject[] = [];
  let current = className;
  for (let step = 0; step < MAX_CHAIN; step++) {
    const entry = info.classes.get(current);
    if (entry === undefined) break;
    chain.unshift(entry.args);
    if (entry.extends === undefined) break;
    current = entry.extends;
  }
  const args = Object.fromEntries(chain.flatMap((level) => Object.entries(level)).filter(([, value]) => value !== null));
  return { base: current, args };
}
