import { beforeEach, describe, expect, it, vi } from "vitest";

const comparisons = vi.hoisted(() => ({ count: 0 }));
vi.mock("node:crypto", async (importOriginal) => {
  const crypto = await importOriginal<typeof import("node:crypto")>();
  return {
    ...crypto,
    timingSafeEqual: (left: NodeJS.ArrayBufferView, right: NodeJS.ArrayBufferView) => {
      comparisons.count++;
      expect(left.byteLength).toBe(right.byteLength);
      return crypto.timingSafeEqual(left, right);
    },
  };
});

const { parsePrincipals } = await import("../../src/auth/principals.js");

const names = ["first", "second", "third", "fourth"];
const set = parsePrincipals(names.map((name) => `${name} = ${name}-${"s".repeat(32)}`).join("\n"), "/f", "client");

describe("constant-time authentication", () => {
  beforeEach(() => {
    comparisons.count = 0;
  });

  it("compares equal-length digests against every entry, even when the first one matches", () => {
    expect(set.authenticate(`first-${"s".repeat(32)}`)).toEqual({ name: "first", kind: "client" });
    expect(comparisons.count).toBe(names.length);
  });

  it("makes as many comparisons for a wrong secret of any length", () => {
    expect(set.authenticate("nope")).toBeUndefined();
    expect(set.authenticate("x".repeat(5000))).toBeUndefined();
    expect(comparisons.count).toBe(names.length * 2);
  });
});
