import type { FieldViolation } from "../errors.js";
import { fieldKey } from "./providers/transcript-text.js";

/**
 * How deep JSON that Axon takes in or keeps may nest. Hashing, Prisma's serializer and protobuf's Struct conversion
 * are all recursive: bounding the depth here keeps every one of them far from the end of the stack.
 */
export const maxJsonDepth = 64;

/** NUL and unpaired UTF-16 surrogates: PostgreSQL refuses both in text and jsonb columns, where SQLite keeps them. */
export const unstorableCharacter = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * The first part of `value` that a database would refuse, drop or alter, as a violation of the field it sits in
 * (`path`, then `.key` and `[index]` below it); undefined when all of it is stored exactly as given. Both databases
 * refuse the same values, so a client meets one contract whichever a server runs on:
 * - nesting deeper than `maxJsonDepth` (which also bounds this walk),
 * - numbers that are not finite (`1e400` parses as Infinity, which JSON cannot hold),
 * - NUL characters and unpaired surrogates, in strings and in keys,
 * - `__proto__` keys, which Prisma's JSON serializer drops without a word.
 */
export function findUnstorableJson(value: unknown, path: string): FieldViolation | undefined {
  const steps: (string | number)[] = [];
  const description = problemIn(value, 1, steps);
  if (description === undefined) return undefined;
  const below = steps.map((step) => (typeof step === "number" ? `[${step}]` : `.${fieldKey(step)}`)).join("");
  return { field: path === "" ? below.replace(/^\./, "") : `${path}${below}`, description };
}

/** What is wrong with `value`; on the way back out, `steps` is filled with the way down to it. */
function problemIn(value: unknown, depth: number, steps: (string | number)[]): string | undefined {
  if (value === null || typeof value === "boolean") return undefined;
  if (typeof value === "string") return textProblem(value);
  if (typeof value === "number") return Number.isFinite(value) ? undefined : "must be a finite number";
  if (typeof value !== "object") return "is not a JSON value";
  if (depth > maxJsonDepth) return `nests deeper than ${maxJsonDepth} levels`;
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      const problem = problemIn(value[index], depth + 1, steps);
      if (problem !== undefined) {
        steps.unshift(index);
        return problem;
      }
    }
    return undefined;
  }
  for (const key of Object.keys(value)) {
    const problem = keyProblem(key) ?? problemIn((value as Record<string, unknown>)[key], depth + 1, steps);
    if (problem !== undefined) {
      steps.unshift(key);
      return problem;
    }
  }
  return undefined;
}

function keyProblem(key: string): string | undefined {
  if (key === "__proto__") return "is a key the store would drop: rename it";
  const problem = textProblem(key);
  return problem === undefined ? undefined : `key ${problem}`;
}

function textProblem(text: string): string | undefined {
  const found = unstorableCharacter.exec(text)?.[0];
  if (found === undefined) return undefined;
  return found === "\u0000" ? "may not contain NUL characters" : "must be well-formed Unicode (it has an unpaired surrogate)";
}
