import { describe, expect, it } from "vitest";
import type { JsonValue } from "../../src/agents/hocon.js";
import { checkAssertion, selectActual, type CheckedTestName, type FinalAnswer } from "../../src/network-tests/assertions.js";

function passes(test: CheckedTestName, expected: JsonValue, actual: JsonValue | undefined): boolean {
  return checkAssertion(test, expected, actual).passed;
}

describe("value and not_value", () => {
  it("compare strings exactly", () => {
    expect(passes("value", "Hello", "Hello")).toBe(true);
    expect(passes("value", "Hello", "hello")).toBe(false);
    expect(passes("not_value", "", "Hello")).toBe(true);
    expect(passes("not_value", "Hello", "Hello")).toBe(false);
  });

  it("compare numbers with numeric strings, as a text answer carries them", () => {
    expect(passes("value", 19481, 19481)).toBe(true);
    expect(passes("value", 19481.0, "19481.0")).toBe(true);
    expect(passes("value", "42", 42)).toBe(true);
    expect(passes("value", 42, " 42 ")).toBe(true);
    expect(passes("value", 42, "forty-two")).toBe(false);
    expect(passes("value", 0, "")).toBe(false);
    expect(passes("not_value", 42, "43")).toBe(true);
    expect(passes("not_value", 42, "42")).toBe(false);
  });

  it("compare lists and objects deeply", () => {
    expect(passes("value", [1, "a"], [1, "a"])).toBe(true);
    expect(passes("value", [1, "a"], ["a", 1])).toBe(false);
    expect(passes("value", { a: { b: [1] } }, { a: { b: [1] } })).toBe(true);
    expect(passes("value", { a: 1 }, { a: 1, b: 2 })).toBe(false);
    expect(passes("value", null, null)).toBe(true);
    expect(passes("not_value", { a: 1 }, { a: 2 })).toBe(true);
  });

  it("say what was expected and what came instead", () => {
    expect(checkAssertion("value", 42, 41)).toEqual({ passed: false, reason: "expected 42, got 41" });
  });
});

describe("less, greater and their not_ forms", () => {
  it("compare numerically against a number, coercing numeric strings", () => {
    expect(passes("less", 10, 9)).toBe(true);
    expect(passes("less", 10, "9.5")).toBe(true);
    expect(passes("less", 10, 10)).toBe(false);
    expect(passes("not_less", 10, 10)).toBe(true);
    expect(passes("not_less", 10, 9)).toBe(false);
    expect(passes("greater", 0, "0.1")).toBe(true);
    expect(passes("greater", 0, 0)).toBe(false);
    expect(passes("not_greater", 0, 0)).toBe(true);
    expect(passes("not_greater", 0, 1)).toBe(false);
  });

  it("compare lexicographically against a string", () => {
    expect(passes("less", "b", "a")).toBe(true);
    expect(passes("greater", "b", "c")).toBe(true);
    expect(passes("not_greater", "b", "b")).toBe(true);
    // A string bound compares strings, not numbers.
    expect(passes("greater", "10", "9")).toBe(true);
  });

  it("fail, in either form, on a value that cannot be compared", () => {
    expect(checkAssertion("less", 10, "many")).toEqual({ passed: false, reason: '"many" is not a number' });
    expect(passes("not_less", 10, "many")).toBe(false);
    expect(passes("not_greater", 10, true)).toBe(false);
    expect(passes("greater", "a", 5)).toBe(false);
  });
});

describe("keywords and not_keywords", () => {
  it("look for a substring of text, ignoring case", () => {
    expect(passes("keywords", "beatles", "It was The Beatles.")).toBe(true);
    expect(passes("keywords", "Stones", "It was The Beatles.")).toBe(false);
    expect(passes("not_keywords", "error", "All fine.")).toBe(true);
    expect(checkAssertion("not_keywords", "error", "An ERROR occurred")).toEqual({
      passed: false,
      reason: 'keyword "error" is present',
    });
  });

  it("look for an element of a list and a key of an object", () => {
    expect(passes("keywords", "jazz", ["Rock", "Jazz"])).toBe(true);
    expect(passes("keywords", "ja", ["Rock", "Jazz"])).toBe(false);
    expect(passes("keywords", 3, [1, 2, 3])).toBe(true);
    expect(passes("keywords", "total", { Total: 3 })).toBe(true);
    expect(passes("not_keywords", "total", { sum: 3 })).toBe(true);
  });

  it("read numbers as text", () => {
    expect(passes("keywords", 42, "The answer is 42.")).toBe(true);
    expect(passes("keywords", "42", 1423)).toBe(true);
  });
});

describe("a value missing from the answer", () => {
  it.each(["value", "not_value", "less", "not_less", "greater", "not_greater", "keywords", "not_keywords"] as const)(
    "fails %s",
    (test) => {
      expect(checkAssertion(test, 1, undefined)).toEqual({ passed: false, reason: "missing from the answer" });
    },
  );
});

describe("selecting what an assertion looks at", () => {
  const answer: FinalAnswer = {
    text: "six times seven is 42",
    slyData: { last_result: 42, nested: { a: { b: "deep" } }, list: [1, 2] },
    structure: { answer: { value: "yes" } },
  };

  it("finds the text, whole parts and nested keys", () => {
    expect(selectActual(answer, { part: "text", path: [] })).toBe("six times seven is 42");
    expect(selectActual(answer, { part: "sly_data", path: ["last_result"] })).toBe(42);
    expect(selectActual(answer, { part: "sly_data", path: ["nested", "a", "b"] })).toBe("deep");
    expect(selectActual(answer, { part: "structure", path: ["answer", "value"] })).toBe("yes");
    expect(selectActual(answer, { part: "structure", path: [] })).toEqual({ answer: { value: "yes" } });
  });

  it("finds nothing below a missing key, a scalar or a list, nor in an absent part", () => {
    expect(selectActual(answer, { part: "sly_data", path: ["absent"] })).toBeUndefined();
    expect(selectActual(answer, { part: "sly_data", path: ["last_result", "x"] })).toBeUndefined();
    expect(selectActual(answer, { part: "sly_data", path: ["list", "0"] })).toBeUndefined();
    expect(selectActual(answer, { part: "sly_data", path: ["toString"] })).toBeUndefined();
    expect(selectActual({ text: "", slyData: undefined, structure: undefined }, { part: "structure", path: ["a"] })).toBeUndefined();
  });
});
