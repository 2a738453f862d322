import { createHash } from "node:crypto";

/**
 * Canonical JSON: what "semantic JSON equality" (idempotency, spec §4) compares.
 *
 * Object keys sorted by UTF-16 code units (as RFC 8785 does), no whitespace, numbers in the shortest form that
 * round-trips (`1.0` and `1` are the same double, so they print alike; `-0` prints `0`), strings escaped as
 * JSON.stringify escapes them. Like JSON, an `undefined` member is left out and an `undefined` array element becomes
 * `null`. Values JSON cannot carry (NaN, Infinity, bigint, functions, symbols, class instances) throw a TypeError:
 * a hash over them would not mean what the client sent.
 */
export function canonicalJson(value: unknown): string {
  return write(value, "$");
}

/** Two values are the same request content when their canonical forms are equal. */
export function semanticallyEqual(left: unknown, right: unknown): boolean {
  return canonicalJson(left) === canonicalJson(right);
}

/**
 * The idempotency fingerprint of a submission (`{operation, target, arguments, reason}`) or a grant request: SHA-256
 * hex over the canonical JSON of `parts`, so key order and number spelling never make a replay a conflict.
 */
export function requestHash(parts: Readonly<Record<string, unknown>>): string {
  return createHash("sha256").update(canonicalJson(parts), "utf8").digest("hex");
}

/** The size of `value` as UTF-8 JSON, in bytes: how the contract bounds target and arguments. */
export function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value), "utf8");
}

function write(value: unknown, where: string): string {
  if (value === null) return "null";
  switch (typeof value) {
    case "boolean":
      return value ? "true" : "false";
    case "string":
      return JSON.stringify(value);
    case "number":
      if (!Number.isFinite(value)) throw new TypeError(`canonical JSON has no ${String(value)} (at ${where})`);
      // String(-0) is "0"; every other finite double prints its shortest round-trip form (ECMA-262 Number::toString).
      return String(value);
    case "object":
      if (Array.isArray(value)) {
        return `[${value.map((element, index) => (element === undefined ? "null" : write(element, `${where}[${index}]`))).join(",")}]`;
      }
      if (!isPlainObject(value)) throw new TypeError(`canonical JSON takes plain objects only (at ${where})`);
      return `{${Object.keys(value)
        .sort()
        .filter((key) => value[key] !== undefined)
        .map((key) => `${JSON.stringify(key)}:${write(value[key], `${where}.${key}`)}`)
        .join(",")}}`;
    default:
      throw new TypeError(`canonical JSON has no ${typeof value} (at ${where})`);
  }
}

function isPlainObject(value: object): value is Record<string, unknown> {
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}
