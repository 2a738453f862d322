import type { JsonObject, JsonValue } from "../agents/hocon.js";
import type { Assertion, TestName } from "./test-case.js";

/** The parts of the final AGENT_FRAMEWORK message that tests look at. */
export interface FinalAnswer {
  text: string;
  slyData: JsonObject | undefined;
  structure: JsonObject | undefined;
}

export type CheckedTestName = Exclude<TestName, "gist" | "not_gist">;

export interface Check {
  passed: boolean;
  /** Why it failed, in words. */
  reason?: string;
}

/** The value an assertion looks at; undefined when the answer has no such key. */
export function selectActual(answer: FinalAnswer, assertion: Pick<Assertion, "part" | "path">): JsonValue | undefined {
  // Protobuf JSON omits an empty text: an answer without one said "".
  if (assertion.part === "text") return answer.text;
  let current: JsonValue | undefined = assertion.part === "sly_data" ? answer.slyData : answer.structure;
  for (const key of assertion.path) {
    if (typeof current !== "object" || current === null || Array.isArray(current) || !Object.hasOwn(current, key)) {
      return undefined;
    }
    current = current[key];
  }
  return current;
}

/**
 * The stock tests other than gist. A missing value fails every test, the `not_` forms included: a test names a key
 * because the answer should carry it. `not_less` and `not_greater` mean >= and <=, so a value that cannot be compared
 * fails them as it fails `less` and `greater`.
 */
export function checkAssertion(test: CheckedTestName, expected: JsonValue, actual: JsonValue | undefined): Check {
  if (actual === undefined) return { passed: false, reason: "missing from the answer" };
  switch (test) {
    case "value":
      return check(valuesEqual(actual, expected), `expected ${show(expected)}, got ${show(actual)}`);
    case "not_value":
      return check(!valuesEqual(actual, expected), `expected anything but ${show(expected)}`);
    case "less":
    case "not_less":
    case "greater":
    case "not_greater":
      return checkOrder(test, expected, actual);
    case "keywords":
      return check(contains(actual, expected), `keyword ${show(expected)} is absent`);
    case "not_keywords":
      return check(!contains(actual, expected), `keyword ${show(expected)} is present`);
  }
}

function check(passed: boolean, reason: string): Check {
  return passed ? { passed } : { passed, reason };
}

/** Numbers compare with numeric strings ("19481.0" equals 19481: text answers carry numbers as words); the rest exactly. */
export function valuesEqual(actual: JsonValue, expected: JsonValue): boolean {
  if (typeof expected === "number" || typeof actual === "number") {
    const actualNumber = toNumber(actual);
    return !Number.isNaN(actualNumber) && actualNumber === toNumber(expected);
  }
  if (typeof actual !== "object" || actual === null || typeof expected !== "object" || expected === null) {
    return actual === expected;
  }
  if (Array.isArray(actual) || Array.isArray(expected)) {
    return (
      Array.isArray(actual) &&
      Array.isArray(expected) &&
      actual.length === expected.length &&
      actual.every((item, index) => valuesEqual(item, expected[index] as JsonValue))
    );
  }
  const keys = Object.keys(actual);
  return (
    keys.length === Object.keys(expected).length &&
    keys.every((key) => Object.hasOwn(expected, key) && valuesEqual(actual[key] as JsonValue, expected[key] as JsonValue))
  );
}

/** A number criterion compares numerically (numeric strings count); a string criterion compares lexicographically. */
function checkOrder(test: "less" | "not_less" | "greater" | "not_greater", expected: JsonValue, actual: JsonValue): Check {
  let order: number;
  if (typeof expected === "number") {
    const actualNumber = toNumber(actual);
    if (Number.isNaN(actualNumber)) return { passed: false, reason: `${show(actual)} is not a number` };
    order = Math.sign(actualNumber - expected);
  } else {
    if (typeof actual !== "string") return { passed: false, reason: `${show(actual)} is not a string` };
    const expectedText = String(expected);
    order = actual < expectedText ? -1 : actual > expectedText ? 1 : 0;
  }
  switch (test) {
    case "less":
      return check(order < 0, `${show(actual)} is not less than ${show(expected)}`);
    case "not_less":
      return check(order >= 0, `${show(actual)} is less than ${show(expected)}`);
    case "greater":
      return check(order > 0, `${show(actual)} is not greater than ${show(expected)}`);
    case "not_greater":
      return check(order <= 0, `${show(actual)} is greater than ${show(expected)}`);
  }
}

/**
 * "Is the keyword in it", ignoring case: a substring of a string, an element of a list, a key of an object; other
 * values are read as their text.
 */
function contains(actual: JsonValue, keyword: JsonValue): boolean {
  const needle = String(keyword).toLowerCase();
  if (Array.isArray(actual)) {
    return actual.some((item) =>
      typeof item === "string" ? item.toLowerCase() === needle : valuesEqual(item, keyword),
    );
  }
  if (typeof actual === "object" && actual !== null) {
    return Object.keys(actual).some((key) => key.toLowerCase() === needle);
  }
  return String(actual).toLowerCase().includes(needle);
}

function toNumber(value: JsonValue): number {
  if (typeof value === "number") return value;
  if (typeof value !== "string" || value.trim() === "") return Number.NaN;
  return Number(value.trim());
}

/** A value as a report shows it: JSON, shortened. */
export function show(value: JsonValue | undefined, limit = 120): string {
  const text = value === undefined ? "(missing)" : JSON.stringify(value);
  return text.length > limit ? `${text.slice(0, limit - 1)}…` : text;
}
