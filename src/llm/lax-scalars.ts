import type { JsonValue } from "@bufbuild/protobuf";

/*
 * neuro-san hands an llm_config to LangChain's chat model classes, pydantic models that read their fields in lax mode:
 * a number or a boolean written as a string (`"temperature": "0.5"`, `"streaming": "true"`) is taken as that number or
 * boolean. These read a value the same way; anything else comes back as it was, for the caller's check to refuse.
 */

const DECIMAL = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;
const TRUE = new Set(["true", "t", "yes", "y", "on", "1"]);
const FALSE = new Set(["false", "f", "no", "n", "off", "0"]);

/** `"0.5"` is 0.5, `" 3 "` is 3. */
export function laxNumber(value: JsonValue): JsonValue {
  if (typeof value !== "string") return value;
  const trimmed = value.trim();
  return DECIMAL.test(trimmed) ? Number(trimmed) : value;
}

/** `"true"`, `"yes"`, `"on"`, `"1"` (any case) are true; `"false"`, `"no"`, `"off"`, `"0"` false. */
export function laxBoolean(value: JsonValue): JsonValue {
  if (typeof value !== "string") return value;
  const word = value.trim().toLowerCase();
  return TRUE.has(word) ? true : FALSE.has(word) ? false : value;
}
