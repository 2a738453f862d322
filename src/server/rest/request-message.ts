import { create, ScalarType, type DescField, type JsonObject, type JsonValue, type Message } from "@bufbuild/protobuf";
import { invalidArgument, type FieldViolation } from "../../errors.js";
import { fieldKey } from "../../operations/providers/transcript-text.js";
import { findField, resolveFieldPath } from "./field-path.js";
import type { RestRoute } from "./http-rule.js";
import { parseLenientJson, parseStrictJson } from "./lenient-json.js";
import type { PathVariables } from "./path-template.js";

export interface RestRequestParts {
  readonly variables: PathVariables;
  readonly query: URLSearchParams;
  /** The parsed JSON body; undefined when there was none. */
  readonly body: JsonValue | undefined;
  /**
   * A strict service's request (agent-v1.md §11): an unknown field, a query parameter given twice or empty, or one
   * that names no free field, is refused rather than ignored.
   */
  readonly strict?: boolean;
}

/**
 * Assembles one JSON object from the body, the query and the path (later sources win, as in
 * grpc-gateway), then parses it leniently. Query parameters only reach fields the path and the body
 * leave free; unknown ones are ignored like unknown JSON fields.
 */
export function buildRequestMessage(route: RestRoute, parts: RestRequestParts): Message {
  const input = route.method.input;
  // Nothing sent (`GET /api/v1/list`): the empty request, with no JSON to assemble and read.
  if (parts.body === undefined && parts.variables.size === 0 && parts.query.size === 0) return create(input);
  const json = bodyJson(route, parts.body);
  const boundPaths = [...parts.variables.keys()].map((key) => key.split("."));
  const bodyField = route.body === "" || route.body === "*" ? undefined : findField(input, route.body);

  const refused: FieldViolation[] = [];
  if (parts.strict) refused.push(...strictQueryViolations(parts.query));
  for (const key of new Set(parts.query.keys())) {
    // With body "*" every field comes from the body or the path: no query parameter names one.
    const fields = route.body === "*" ? undefined : resolveFieldPath(input, key.split("."));
    if (fields === undefined || fields[0] === bodyField || boundPaths.some((bound) => overlaps(bound, fields))) {
      if (parts.strict) refused.push({ field: fieldKey(key), description: "not a query parameter of this route" });
      continue;
    }
    const leaf = fields[fields.length - 1]!;
    const values = parts.query.getAll(key);
    const value = leaf.fieldKind === "list" ? values.map((text) => fromText(leaf, text)) : fromText(leaf, values[values.length - 1]!);
    setAt(json, fields, value);
  }
  if (refused.length > 0) throw invalidArgument("INVALID_QUERY", "the query string is invalid", dedupe(refused));
  for (const [key, text] of parts.variables) {
    const fields = resolveFieldPath(input, key.split("."))!;
    setAt(json, fields, fromText(fields[fields.length - 1]!, text));
  }
  return parts.strict ? parseStrictJson(input, json) : parseLenientJson(input, json);
}

/** Every parameter at most once, none empty. */
function strictQueryViolations(query: URLSearchParams): FieldViolation[] {
  const violations: FieldViolation[] = [];
  const seen = new Set<string>();
  for (const [key, value] of query) {
    if (seen.has(key)) violations.push({ field: fieldKey(key), description: "given more than once" });
    else if (value === "") violations.push({ field: fieldKey(key), description: "must not be empty" });
    seen.add(key);
  }
  return violations;
}

function dedupe(violations: FieldViolation[]): FieldViolation[] {
  const seen = new Set<string>();
  return violations.filter((violation) => !seen.has(violation.field) && seen.add(violation.field));
}

function bodyJson(route: RestRoute, body: JsonValue | undefined): JsonObject {
  if (route.body === "" || body === undefined || body === null) return {};
  if (route.body !== "*") return { [findField(route.method.input, route.body)!.jsonName]: body };
  if (typeof body !== "object" || Array.isArray(body)) {
    throw invalidArgument("INVALID_FIELD", "request has invalid fields", [
      { field: "", description: "the request body must be a JSON object" },
    ]);
  }
  return { ...body };
}

// Path and query values are text; only booleans need converting, since protobuf JSON already accepts
// numbers as strings and lenient enums accept names and numerals.
function fromText(field: DescField, text: string): JsonValue {
  const isBool =
    field.scalar === ScalarType.BOOL || (field.fieldKind === "message" && field.message.typeName === "google.protobuf.BoolValue");
  if (!isBool) return text;
  const lower = text.toLowerCase();
  if (lower === "true" || lower === "1") return true;
  if (lower === "false" || lower === "0") return false;
  return text;
}

function overlaps(bound: readonly string[], fields: readonly DescField[]): boolean {
  const length = Math.min(bound.length, fields.length);
  for (let index = 0; index < length; index++) {
    const field = fields[index]!;
    if (bound[index] !== field.name && bound[index] !== field.jsonName) return false;
  }
  return true;
}

function setAt(json: JsonObject, fields: readonly DescField[], value: JsonValue): void {
  let target = json;
  fields.forEach((field, index) => {
    // protobuf JSON accepts either name; keep only one so the field is not "set twice".
    const next = target[field.jsonName] ?? target[field.name];
    if (field.name !== field.jsonName) delete target[field.name];
    if (index === fields.length - 1) {
      target[field.jsonName] = value;
      return;
    }
    const child: JsonObject = typeof next === "object" && next !== null && !Array.isArray(next) ? { ...next } : {};
    target[field.jsonName] = child;
    target = child;
  });
}
