import { describe, expect, it } from "vitest";
import { nonJsonValueIn, restoreNonJsonKeys } from "../../src/agents/json-values.js";

describe("what JSON cannot carry", () => {
  it("finds nothing in JSON", () => {
    expect(nonJsonValueIn({ a: [1, "two", true, null, { b: -0.5 }] }, "value")).toBeUndefined();
  });

  it.each<[string, unknown]>([
    ["value.total is NaN", { total: Number.NaN }],
    ["value[1] is -Infinity", [1, Number.NEGATIVE_INFINITY]],
    ["value.when is a Date", { when: new Date(0) }],
    ["value.big is a bigint", { big: 1n }],
    ["value.call is a function", { call: () => 1 }],
    ["value.gone is undefined", { gone: undefined }],
  ])("names the first place it is not: %s", (found, value) => {
    expect(nonJsonValueIn(value, "value")).toBe(found);
  });

  it("names a cycle instead of walking it forever", () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    expect(nonJsonValueIn(cyclic, "value")).toBe("value.self refers back to itself");
    // The same object twice, side by side, is no cycle.
    const shared = { x: 1 };
    expect(nonJsonValueIn({ left: shared, right: shared }, "value")).toBeUndefined();
  });

  it("puts back the sly_data keys that stopped being JSON, and only those", () => {
    const slyData: Record<string, any> = { total: Number.NaN, fresh: Number.POSITIVE_INFINITY, note: "new", kept: 1 };
    expect(restoreNonJsonKeys(slyData, { total: 12, kept: 1 })).toBe("sly_data.total is NaN");
    expect(slyData).toEqual({ total: 12, note: "new", kept: 1 });
  });
});
