import { describe, expect, it } from "vitest";
import { findUnstorableJson, maxJsonDepth } from "../../src/operations/json-safety.js";

/** `levels` arrays inside each other, as a client would send them. */
const nestedArrays = (levels: number) => JSON.parse(`${"[".repeat(levels)}${"]".repeat(levels)}`) as unknown;

describe("findUnstorableJson", () => {
  it.each([
    ["an empty object", {}],
    ["scalars of every kind", { text: "", zero: 0, negative: -1.5, big: 1e300, yes: true, nothing: null }],
    ["text beyond the BMP, as paired surrogates", { emoji: "\u{1f600}", han: "\u{20000}" }],
    ["keys that are Object.prototype's names", JSON.parse('{"constructor": 1, "toString": 2, "hasOwnProperty": 3, "prototype": 4}')],
    ["Prisma's own tag key", { $type: "DateTime", value: "2026-01-01" }],
    [`${maxJsonDepth} levels of nesting`, nestedArrays(maxJsonDepth)],
  ])("accepts %s", (_name, value) => {
    expect(findUnstorableJson(value, "arguments")).toBeUndefined();
  });

  it("refuses one level more than the limit, naming where it goes too deep", () => {
    expect(findUnstorableJson({ sly_data: { a: nestedArrays(maxJsonDepth - 1) } }, "arguments")).toEqual({
      field: `arguments.sly_data.a${"[0]".repeat(maxJsonDepth - 2)}`,
      description: `nests deeper than ${maxJsonDepth} levels`,
    });
  });

  it("refuses JSON nested 100,000 deep without overflowing the stack", () => {
    const deep = JSON.parse(`{"sly_data":${'{"a":'.repeat(100_000)}1${"}".repeat(100_000)}}`) as unknown;
    const violation = findUnstorableJson(deep, "");
    expect(violation?.description).toBe(`nests deeper than ${maxJsonDepth} levels`);
    expect(violation?.field).toBe(`sly_data${".a".repeat(maxJsonDepth - 1)}`);
  });

  it.each([
    ["1e400, which parses as Infinity", JSON.parse('{"n": 1e400}'), "arguments.n"],
    ["-Infinity", { n: -Infinity }, "arguments.n"],
    ["NaN inside a list", { list: [1, Number.NaN] }, "arguments.list[1]"],
  ])("refuses a number that is not finite: %s", (_name, value, field) => {
    expect(findUnstorableJson(value, "arguments")).toEqual({ field, description: "must be a finite number" });
  });

  it.each([
    ["in a string", JSON.parse('{"text": "a\\u0000b"}'), "target.text", "may not contain NUL characters"],
    ["in a key", JSON.parse('{"ok": {"a\\u0000b": 1}}'), "target.ok.a b", "key may not contain NUL characters"],
    ["as a lone high surrogate", JSON.parse('{"text": "\\ud800"}'), "target.text", "must be well-formed Unicode (it has an unpaired surrogate)"],
    ["as a lone low surrogate", JSON.parse('["\\udc00x"]'), "target[0]", "must be well-formed Unicode (it has an unpaired surrogate)"],
    ["as a pair in the wrong order", JSON.parse('{"text": "\\udc00\\ud800"}'), "target.text", "must be well-formed Unicode (it has an unpaired surrogate)"],
    // The field names the key in printable text only: an error may not carry what it refuses.
    ["as a lone surrogate in a key", JSON.parse('{"\\udfff": 1}'), "target.", "key must be well-formed Unicode (it has an unpaired surrogate)"],
  ])("refuses characters PostgreSQL cannot store: %s", (_name, value, field, description) => {
    expect(findUnstorableJson(value, "target")).toEqual({ field, description });
  });

  it("refuses a __proto__ key, which the store would drop", () => {
    const value = JSON.parse('{"query": {"page": "1", "__proto__": "x"}}') as unknown;
    expect(findUnstorableJson(value, "arguments")).toEqual({ field: "arguments.query.__proto__", description: "is a key the store would drop: rename it" });
  });

  it("names fields from the root when the path is empty, and refuses what is no JSON at all", () => {
    expect(findUnstorableJson({ reason: "\u0000" }, "")).toEqual({ field: "reason", description: "may not contain NUL characters" });
    expect(findUnstorableJson("\u0000", "reason")).toEqual({ field: "reason", description: "may not contain NUL characters" });
    expect(findUnstorableJson({ when: undefined }, "")).toEqual({ field: "when", description: "is not a JSON value" });
    expect(findUnstorableJson([1n], "list")).toEqual({ field: "list[0]", description: "is not a JSON value" });
  });

  it("reports only the first problem", () => {
    expect(findUnstorableJson({ a: Infinity, b: "\u0000" }, "")).toEqual({ field: "a", description: "must be a finite number" });
  });
});
