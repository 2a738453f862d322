import type { DescMessage, JsonValue, MessageShape } from "@bufbuild/protobuf";
import { invalidArgument } from "../../errors.js";
import { isJsonObject } from "../../json.js";
import { parseStrictJson, parseText, requestText } from "../rest/lenient-json.js";
import { maxStrictBodyBytes } from "./contract.js";
import { findDuplicateKey } from "./duplicate-keys.js";

/**
 * A strict service's request body (agent-v1.md §11): at most 2 MiB whatever the server-wide limit, UTF-8, exactly one
 * JSON value and that an object, no key twice in any object. Undefined when the body is empty. Each refusal is an
 * INVALID_ARGUMENT whose field violation names where it is.
 */
export function parseStrictBody(bytes: Uint8Array): JsonValue | undefined {
  refuseOversizedBody(bytes.byteLength);
  const text = requestText(bytes);
  if (text === undefined) return undefined;
  const json = parseText(text, bodyField);
  if (!isJsonObject(json)) {
    throw invalidArgument("INVALID_FIELD", "the request body must be a JSON object", [{ field: bodyField, description: "must be a JSON object" }]);
  }
  const duplicate = findDuplicateKey(text);
  if (duplicate !== undefined) {
    throw invalidArgument("DUPLICATE_FIELD", "a key appears twice in one JSON object", [{ field: duplicate, description: "appears more than once" }]);
  }
  return json;
}

/** A strict service's request message from its JSON body (Connect JSON: the whole message is the body). */
export function decodeStrictJson<Desc extends DescMessage>(schema: Desc, bytes: Uint8Array): MessageShape<Desc> {
  return parseStrictJson(schema, parseStrictBody(bytes) ?? {});
}

/** The 2 MiB bound, in bytes, on any codec's body (a protobuf body is bounded alike). */
export function refuseOversizedBody(byteLength: number): void {
  if (byteLength <= maxStrictBodyBytes) return;
  throw invalidArgument("REQUEST_BODY_TOO_LARGE", "the request body is larger than 2 MiB", [
    { field: bodyField, description: `at most ${maxStrictBodyBytes} bytes` },
  ]);
}

/** How a violation names the body as a whole: proto3 JSON would leave an empty field name out. */
const bodyField = "body";
