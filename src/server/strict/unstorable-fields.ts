import type { DescField, DescMessage, DescService } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { invalidArgument, type FieldViolation } from "../../errors.js";
import { findUnstorableJson } from "../../operations/json-safety.js";
import { hasSpecialJson } from "../rest/field-path.js";

/**
 * A strict service whose every request is first searched for what a database would refuse or alter (NUL, unpaired
 * surrogates, non-finite numbers, `__proto__` keys, nesting past the bound) in any string, Struct or number it
 * carries: a 400 naming the field, whatever protocol carried it, before the implementation (and the database) sees it.
 */
export function refusingUnstorable<T extends DescService>(service: T, implementation: ServiceImpl<T>): ServiceImpl<T> {
  const guarded: Record<string, unknown> = {};
  for (const method of service.methods) {
    const impl = (implementation as Record<string, (request: object, context: unknown) => unknown>)[method.localName]!;
    guarded[method.localName] =
      method.methodKind === "server_streaming"
        ? async function* (request: object, context: unknown) {
            refuseUnstorable(method.input, request);
            yield* impl(request, context) as AsyncIterable<unknown>;
          }
        : (request: object, context: unknown) => {
            refuseUnstorable(method.input, request);
            return impl(request, context);
          };
  }
  return guarded as ServiceImpl<T>;
}

function refuseUnstorable(schema: DescMessage, request: object): void {
  const violation = findUnstorableField(schema, request, "");
  if (violation !== undefined) throw invalidArgument("UNSTORABLE_VALUE", "the request holds a value that cannot be stored", [violation]);
}

/** The first field of `message` holding an unstorable value, by its JSON path. */
export function findUnstorableField(schema: DescMessage, message: object, path: string): FieldViolation | undefined {
  for (const field of schema.fields) {
    const value = (message as Record<string, unknown>)[field.localName];
    if (value === undefined || value === null) continue;
    const fieldPath = path === "" ? field.jsonName : `${path}.${field.jsonName}`;
    const violation =
      field.fieldKind === "list"
        ? firstOf(value as unknown[], (item, index) => valueProblem(field, item, `${fieldPath}[${index}]`))
        : field.fieldKind === "map"
          ? firstOf(Object.entries(value as object), ([key, entry]) => findUnstorableJson(key, fieldPath) ?? valueProblem(field, entry, `${fieldPath}.${key}`))
          : valueProblem(field, value, fieldPath);
    if (violation !== undefined) return violation;
  }
  return undefined;
}

function valueProblem(field: DescField, value: unknown, path: string): FieldViolation | undefined {
  const message = field.fieldKind === "message" ? field.message : field.fieldKind === "list" && field.listKind === "message" ? field.message : undefined;
  // Messages of our own are walked by their fields; Struct, Value and the other well-known types are JSON already.
  if (message !== undefined && !hasSpecialJson(message)) return findUnstorableField(message, value as object, path);
  if (message !== undefined) return jsonTypes.has(message.typeName) ? findUnstorableJson(value, path) : undefined;
  return typeof value === "string" || typeof value === "number" ? findUnstorableJson(value, path) : undefined;
}

/** The well-known types protobuf-es holds as plain JSON. */
const jsonTypes = new Set(["google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue"]);

function firstOf<T>(items: readonly T[], find: (item: T, index: number) => FieldViolation | undefined): FieldViolation | undefined {
  for (let index = 0; index < items.length; index++) {
    const found = find(items[index]!, index);
    if (found !== undefined) return found;
  }
  return undefined;
}
