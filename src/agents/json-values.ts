import type { JsonObject } from "@bufbuild/protobuf";

/**
 * Where a value stops being JSON, e.g. `sly_data.total is NaN`; undefined when all of it is JSON. Coded tools are
 * plain code: what they return or write must still travel as JSON text, a protobuf Struct or a REST line.
 */
export function nonJsonValueIn(value: unknown, path: string, seen = new Set<object>()): string | undefined {
  if (value === null || typeof value === "string" || typeof value === "boolean") return undefined;
  if (typeof value === "number") return Number.isFinite(value) ? undefined : `${path} is ${value}`;
  if (typeof value !== "object") return `${path} is ${typeof value === "undefined" ? "undefined" : `a ${typeof value}`}`;
  if (seen.has(value)) return `${path} refers back to itself`;
  const prototype = Object.getPrototypeOf(value) as unknown;
  if (!Array.isArray(value) && prototype !== Object.prototype && prototype !== null) {
    return `${path} is a ${value.constructor?.name ?? "non-plain object"}`;
  }
  seen.add(value);
  const entries: [string, unknown][] = Array.isArray(value)
    ? value.map((element, index) => [`[${index}]`, element])
    : Object.entries(value).map(([key, child]) => [`.${key}`, child]);
  for (const [step, child] of entries) {
    const found = nonJsonValueIn(child, path + step, seen);
    if (found !== undefined) return found;
  }
  seen.delete(value);
  return undefined;
}

/**
 * Puts back, from `before`, every top-level sly_data key whose new value is not JSON (or removes it if it is new),
 * so one bad write cannot break the rest of the chat; other keys, possibly written meanwhile by parallel tools, stay.
 * Returns what was wrong with the first one.
 */
export function restoreNonJsonKeys(slyData: JsonObject, before: JsonObject): string | undefined {
  let first: string | undefined;
  for (const key of Object.keys(slyData)) {
    const problem = nonJsonValueIn(slyData[key], `sly_data.${key}`);
    if (problem === undefined) continue;
    first ??= problem;
    if (Object.hasOwn(before, key)) slyData[key] = before[key]!;
    else delete slyData[key];
  }
  return first;
}
