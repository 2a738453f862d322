import {
  fromJson,
  type DescEnum,
  type DescField,
  type DescMessage,
  type JsonObject,
  type JsonValue,
  type MessageShape,
} from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { AxonError, invalidArgument, type FieldViolation } from "../../errors.js";
import { typeRegistry } from "../descriptors.js";
import { findField, hasSpecialJson } from "./field-path.js";
import { isJsonObject } from "../../json.js";
import { fieldKey } from "../../operations/providers/transcript-text.js";

/**
 * Request JSON is read as neuro-san read it: unknown fields are ignored, an enum accepts its name in
 * any case or its number, and an enum value nobody knows means the enum's default. Everything else
 * follows canonical protobuf JSON; a value of the wrong type is an INVALID_ARGUMENT naming its field.
 *
 * The JSON is first walked against the descriptor (normalizing enums, collecting every violation with
 * its path), then handed to protobuf-es, which stays the one JSON codec.
 */
export function parseLenientJson<Desc extends DescMessage>(schema: Desc, json: JsonValue): MessageShape<Desc> {
  return parseRequestJson(schema, json, false);
}

/**
 * Request JSON as the strict services read it (agent-v1.md §11): as `parseLenientJson`, except that a field the
 * message does not have, at any depth, is a violation naming it.
 */
export function parseStrictJson<Desc extends DescMessage>(schema: Desc, json: JsonValue): MessageShape<Desc> {
  return parseRequestJson(schema, json, true);
}

function parseRequestJson<Desc extends DescMessage>(schema: Desc, json: JsonValue, strict: boolean): MessageShape<Desc> {
  const violations: FieldViolation[] = [];
  const normalized = normalizeMessage(schema, json === null ? {} : json, "", { violations, strict });
  if (violations.length > 0) throw invalidFields(violations);
  try {
    return fromJson(schema, normalized, readOptions);
  } catch (error) {
    // What the walk cannot see, e.g. a oneof set twice.
    throw invalidFields([{ field: "", description: describeJsonError(error) }]);
  }
}

/** Decodes a request body as UTF-8 JSON; empty (or blank) means no body. */
export function parseJsonText(bytes: Uint8Array): JsonValue | undefined {
  const text = requestText(bytes);
  return text === undefined ? undefined : parseText(text);
}

/** A request body as UTF-8 text; undefined when it is empty or blank. */
export function requestText(bytes: Uint8Array): string | undefined {
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw malformedJson("request body is not UTF-8");
  }
  return text.trim() === "" ? undefined : text;
}

/**
 * JSON.parse, refusing what is not one JSON value (trailing data included) as MALFORMED_JSON, a violation of `field`
 * (the whole body is "").
 */
export function parseText(text: string, field = ""): JsonValue {
  try {
    return JSON.parse(text) as JsonValue;
  } catch (error) {
    throw malformedJson(error instanceof Error ? error.message : String(error), field);
  }
}

/** The value an enum field takes from lenient JSON: a canonical name or a known number. */
export function normalizeEnumJson(desc: DescEnum, value: JsonValue): string | number {
  if (typeof value === "string") {
    const name = enumNames(desc).get(value.trim().toLowerCase());
    if (name !== undefined) return name;
    if (/^\s*-?\d+\s*$/.test(value)) value = Number(value);
  }
  if (typeof value === "number" && desc.values.some((enumValue) => enumValue.number === value)) return value;
  return (desc.values.find((enumValue) => enumValue.number === 0) ?? desc.values[0]!).name;
}

const readOptions = { registry: typeRegistry, ignoreUnknownFields: true };
const utf8 = new TextDecoder("utf-8", { fatal: true });

/** What one walk collects, and whether it refuses unknown fields. */
interface Walk {
  readonly violations: FieldViolation[];
  readonly strict: boolean;
}

function normalizeMessage(message: DescMessage, json: JsonValue, path: string, walk: Walk): JsonValue {
  const { violations } = walk;
  if (hasSpecialJson(message)) return checkWellKnown(message, json, path, violations);
  if (!isJsonObject(json)) {
    violations.push({ field: path, description: `expected a JSON object, got ${describeValue(json)}` });
    return json;
  }
  const normalized: JsonObject = {};
  for (const [key, value] of Object.entries(json)) {
    const field = findField(message, key);
    if (field === undefined) {
      if (walk.strict) violations.push({ field: join(path, fieldKey(key)), description: "unknown field" });
      continue;
    }
    normalized[key] = normalizeField(field, value, join(path, field.jsonName), walk);
  }
  return normalized;
}

function normalizeField(field: DescField, value: JsonValue, path: string, walk: Walk): JsonValue {
  const { violations } = walk;
  if (value === null) return null;
  switch (field.fieldKind) {
    case "scalar":
      return checkLeaf(field, value, value, path, violations);
    case "enum":
      return isNullValue(field.enum) ? value : normalizeEnumJson(field.enum, value);
    case "message":
      return normalizeMessage(field.message, value, path, walk);
    case "list": {
      if (!Array.isArray(value)) {
        violations.push({ field: path, description: `expected an array, got ${describeValue(value)}` });
        return value;
      }
      return value.map((item, index) => {
        const itemPath = `${path}[${index}]`;
        if (item === null && !(field.listKind === "message" && field.message.typeName === "google.protobuf.Value")) {
          violations.push({ field: itemPath, description: "list item must not be null" });
          return item;
        }
        if (field.listKind === "enum") return normalizeEnumJson(field.enum, item);
        if (field.listKind === "message") return normalizeMessage(field.message, item, itemPath, walk);
        return checkLeaf(field, [item], item, itemPath, violations);
      });
    }
    case "map": {
      if (!isJsonObject(value)) {
        violations.push({ field: path, description: `expected a JSON object, got ${describeValue(value)}` });
        return value;
      }
      const entries = Object.entries(value).map(([key, entry]): [string, JsonValue] => {
        const entryPath = `${path}[${JSON.stringify(key)}]`;
        if (field.mapKind === "enum") return [key, normalizeEnumJson(field.enum, entry)];
        if (field.mapKind === "message") return [key, normalizeMessage(field.message, entry, entryPath, walk)];
        return [key, checkLeaf(field, { [key]: entry }, entry, entryPath, violations)];
      });
      return Object.fromEntries(entries);
    }
  }
}

// Scalars are checked by protobuf-es itself on a one-field message, so the rules (int ranges, base64,
// numeric strings) are exactly the codec's and only the path is ours.
function checkLeaf(field: DescField, fieldJson: JsonValue, value: JsonValue, path: string, violations: FieldViolation[]): JsonValue {
  try {
    fromJson(field.parent, { [field.jsonName]: fieldJson }, readOptions);
  } catch (error) {
    violations.push({ field: path, description: describeJsonError(error) });
  }
  return value;
}

function checkWellKnown(message: DescMessage, json: JsonValue, path: string, violations: FieldViolation[]): JsonValue {
  // Struct and Value take any JSON of their shape; skip a second parse of what may be large sly_data.
  switch (message.typeName) {
    case "google.protobuf.Value":
      return json;
    case "google.protobuf.Struct":
      if (!isJsonObject(json)) violations.push({ field: path, description: `expected a JSON object, got ${describeValue(json)}` });
      return json;
    case "google.protobuf.ListValue":
      if (!Array.isArray(json)) violations.push({ field: path, description: `expected an array, got ${describeValue(json)}` });
      return json;
  }
  try {
    fromJson(message, json, readOptions);
  } catch (error) {
    violations.push({ field: path, description: `not a valid ${message.typeName}: ${describeJsonError(error)}` });
  }
  return json;
}

const enumNameCache = new WeakMap<DescEnum, Map<string, string>>();

function enumNames(desc: DescEnum): Map<string, string> {
  let names = enumNameCache.get(desc);
  if (names === undefined) {
    names = new Map(desc.values.map((enumValue) => [enumValue.name.toLowerCase(), enumValue.name]));
    enumNameCache.set(desc, names);
  }
  return names;
}

function isNullValue(desc: DescEnum): boolean {
  return desc.typeName === "google.protobuf.NullValue";
}

function join(path: string, name: string): string {
  return path === "" ? name : `${path}.${name}`;
}

function describeValue(json: JsonValue): string {
  if (json === null) return "null";
  if (Array.isArray(json)) return "an array";
  return typeof json === "object" ? "an object" : JSON.stringify(json);
}

// protobuf-es wraps field errors as "cannot decode <field> from JSON: <reason>"; the path already
// names the field, so keep the reason.
function describeJsonError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  if (error.cause instanceof Error) return error.cause.message;
  return error.message.replace(/^cannot decode .*? from JSON:? /, "");
}

function invalidFields(violations: FieldViolation[]): AxonError {
  return invalidArgument("INVALID_FIELD", "request has invalid fields", violations);
}

function malformedJson(detail: string, field = ""): AxonError {
  return new AxonError(Code.InvalidArgument, "MALFORMED_JSON", "request body is not valid JSON", {
    metadata: { detail },
    fieldViolations: [{ field, description: detail }],
  });
}
