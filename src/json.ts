import type { JsonObject } from "@bufbuild/protobuf";

export type { JsonObject, JsonValue } from "@bufbuild/protobuf";

/** A JSON object: not null, not an array. */
export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
