import type { ExecutionOutcome } from "./provider.js";

/** A failed outcome, the way providers report one. */
export function failed(code: string, message: string): ExecutionOutcome {
  return { state: "failed", code, message };
}

/** One line of printable text: controls and line breaks become spaces, runs of whitespace one space. */
export function printable(value: unknown): string {
  return typeof value === "string" ? value.replace(/[\p{C}\p{Zl}\p{Zp}]/gu, " ").replace(/\s+/g, " ").trim() : "";
}

/** At most `limit` characters (code points), an ellipsis marking the cut. */
export function truncate(text: string, limit: number): string {
  const codePoints = Array.from(text);
  return codePoints.length <= limit ? text : `${codePoints.slice(0, limit - 1).join("")}…`;
}

/** A user-supplied key inside a field path: bounded, printable. */
export function fieldKey(key: string): string {
  return truncate(printable(key), 64);
}
