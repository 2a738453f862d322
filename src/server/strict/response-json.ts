import { toJson, type DescMessage, type DescMethod, type JsonObject, type JsonValue, type Message } from "@bufbuild/protobuf";
import { isJsonObject } from "../../json.js";
import { typeRegistry } from "../descriptors.js";
import { hasSpecialJson } from "../rest/field-path.js";
import { isStrictService } from "./contract.js";

/**
 * A response message in canonical protobuf JSON. A strict service's always carries its arrays, empty ones included
 * (`{"operations": []}`): proto3 JSON leaves empty repeated fields out, unYOLO's clients index them (agent-v1.md §11).
 * Which fields are arrays comes from the descriptors.
 */
export function responseJson(method: DescMethod, response: Message): JsonValue {
  const json = toJson(method.output, response, { registry: typeRegistry });
  return isStrictService(method.parent) ? withArrays(method.output, json) : json;
}

function withArrays(message: DescMessage, json: JsonValue): JsonValue {
  if (hasSpecialJson(message) || !isJsonObject(json)) return json;
  const filled: JsonObject = { ...json };
  for (const field of message.fields) {
    const value = filled[field.jsonName];
    if (field.fieldKind === "list") {
      filled[field.jsonName] =
        value === undefined ? [] : field.listKind === "message" && Array.isArray(value) ? value.map((item) => withArrays(field.message, item)) : value;
    } else if (field.fieldKind === "message" && value !== undefined) {
      filled[field.jsonName] = withArrays(field.message, value);
    }
  }
  return filled;
}
