import { describe, expect, it } from "vitest";

import { canonicalJson, requestHash, semanticallyEqual } from "../../src/operations/canonical-json.js";

describe("canonical JSON", () => {
  it("sorts object keys at every depth and writes no whitespace", () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } })).toBe('{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}');
  });

  it("sorts keys by UTF-16 code units, so integer-like keys do not jump ahead", () => {
    expect(canonicalJson({ b: 1, "10": 2, "2": 3, A: 4, é: 5 })).toBe('{"10":2,"2":3,"A":4,"b":1,"é":5}');
  });

  it("keeps array order", () => {
    expect(canonicalJson([3, 1, 2])).toBe("[3,1,2]");
    expect(semanticallyEqual([1, 2], [2, 1])).toBe(false);
  });

  it("treats 1.0 and 1 as the same number and writes -0 as 0", () => {
    expect(canonicalJson(JSON.parse('{"n":1.0,"m":-0,"e":1e2,"f":0.10}'))).toBe('{"e":100,"f":0.1,"m":0,"n":1}');
    expect(canonicalJson(-0)).toBe("0");
    expect(semanticallyEqual(JSON.parse("1.0"), 1)).toBe(true);
  });

  it("writes numbers in their shortest round-trip form", () => {
    expect(canonicalJson([1e21, 1e-7, 123456789.125, 2 ** 53])).toBe("[1e+21,1e-7,123456789.125,9007199254740992]");
  });

  it("escapes strings as JSON does, unicode left as is", () => {
    expect(canonicalJson({ s: 'line\n"quote"\u0001 ✓' })).toBe('{"s":"line\\n\\"quote\\"\\u0001 ✓"}');
  });

  it("leaves out undefined members and writes undefined array elements as null, like JSON", () => {
    expect(canonicalJson({ a: undefined, b: [undefined, 1] })).toBe('{"b":[null,1]}');
  });

  it("refuses values JSON cannot carry", () => {
    expect(() => canonicalJson({ n: Number.NaN })).toThrow(TypeError);
    expect(() => canonicalJson({ n: Number.POSITIVE_INFINITY })).toThrow(TypeError);
    expect(() => canonicalJson({ n: 1n })).toThrow(TypeError);
    expect(() => canonicalJson({ d: new Date(0) })).toThrow(TypeError);
    expect(() => canonicalJson(() => 1)).toThrow(TypeError);
  });

  it("accepts objects without a prototype", () => {
    const bare = Object.assign(Object.create(null) as Record<string, unknown>, { b: 2, a: 1 });
    expect(canonicalJson(bare)).toBe('{"a":1,"b":2}');
  });
});

describe("request hash", () => {
  const submission = { operation: "http.request", target: { credential: "gh", path: "/user" }, arguments: { method: "GET" }, reason: "look" };

  it("is SHA-256 hex", () => {
    expect(requestHash(submission)).toMatch(/^[0-9a-f]{64}$/);
  });

  it("is the same for semantically equal JSON: key order and number spelling do not matter", () => {
    const reordered = JSON.parse('{"reason":"look","arguments":{"method":"GET"},"target":{"path":"/user","credential":"gh"},"operation":"http.request"}');
    expect(requestHash(reordered)).toBe(requestHash(submission));
    expect(requestHash({ a: JSON.parse("[1.0, 2.50]") })).toBe(requestHash({ a: [1, 2.5] }));
  });

  it("differs when any part differs", () => {
    const hashes = new Set([
      requestHash(submission),
      requestHash({ ...submission, reason: "look again" }),
      requestHash({ ...submission, target: { credential: "gh", path: "/users" } }),
      requestHash({ ...submission, arguments: { method: "GET", query: {} } }),
      requestHash({ ...submission, arguments: { method: "GET" }, extra: null }),
    ]);
    expect(hashes.size).toBe(5);
  });

  it("tells a string from a number", () => {
    expect(requestHash({ a: "1" })).not.toBe(requestHash({ a: 1 }));
  });
});
