import type { JsonObject, JsonValue } from "@bufbuild/protobuf";

/** A model's tool-call arguments: a JSON object, or `{}` with the reason when the model wrote something else. */
export function parseToolArguments(raw: string): { arguments: JsonObject; argumentsError?: string } {
  // Models send "" for tools without parameters.
  if (raw.trim() === "") return { arguments: {} };
  try {
    const parsed: unknown = JSON.parse(raw);
    if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) return { arguments: parsed as JsonObject };
    return { arguments: {}, argumentsError: "the arguments are not a JSON object" };
  } catch {
    return { arguments: {}, argumentsError: "the arguments are not valid JSON" };
  }
}

/**
 * The schema a tool is offered with: always an object schema (the APIs reject any other; agents without parameters
 * have `{}`), its Python type names written as JSON Schema's, at every depth (`float` as `number`, `int` as
 * `integer`...), as neuro-san's typed models send a function block and as providers that validate schemas require.
 */
export function objectSchema(parameters: JsonObject): JsonObject {
  let schema = offeredSchemas.get(parameters);
  if (schema === undefined) {
    schema = withJsonSchemaTypes(parameters["type"] === undefined ? { type: "object", properties: {}, ...parameters } : parameters) as JsonObject;
    offeredSchemas.set(parameters, schema);
  }
  return schema;
}

/** Networks are frozen and live as long as they are served: each function block is rewritten once. */
const offeredSchemas = new WeakMap<JsonObject, JsonObject>();

/** Python's names for JSON Schema's types, as pydantic reads them in a function block. */
const JSON_SCHEMA_TYPES: Readonly<Record<string, string>> = { float: "number", int: "integer", str: "string", bool: "boolean", list: "array", dict: "object" };

/** Keywords whose value is a map of names to schemas, a schema (or a list of them), and a list of schemas. */
const SCHEMA_MAPS = new Set(["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"]);
const SCHEMA_VALUES = new Set(["items", "additionalProperties", "not", "contains", "if", "then", "else", "propertyNames", "additionalItems", "unevaluatedItems", "unevaluatedProperties"]);
const SCHEMA_LISTS = new Set(["anyOf", "oneOf", "allOf", "prefixItems"]);

/** A schema with every `type` (a name or a list of names) renamed, in it and in the schemas within it; data (enums, defaults, property names) as it is. */
function withJsonSchemaTypes(schema: JsonValue): JsonValue {
  if (Array.isArray(schema)) return schema.map(withJsonSchemaTypes);
  if (typeof schema !== "object" || schema === null) return schema;
  const renamed: JsonObject = {};
  for (const [key, child] of Object.entries(schema)) {
    if (key === "type") renamed[key] = Array.isArray(child) ? child.map(jsonSchemaType) : jsonSchemaType(child);
    else if (SCHEMA_MAPS.has(key) && typeof child === "object" && child !== null && !Array.isArray(child)) {
      renamed[key] = Object.fromEntries(Object.entries(child).map(([name, inner]) => [name, withJsonSchemaTypes(inner)]));
    } else if (SCHEMA_VALUES.has(key) || (SCHEMA_LISTS.has(key) && Array.isArray(child))) renamed[key] = withJsonSchemaTypes(child);
    else renamed[key] = child;
  }
  return renamed;
}

function jsonSchemaType(type: JsonValue): JsonValue {
  return typeof type === "string" ? (JSON_SCHEMA_TYPES[type] ?? type) : type;
}
