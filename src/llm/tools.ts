import type { JsonObject } from "@bufbuild/protobuf";

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

/** Both APIs reject a tool whose schema is not an object schema; agents without parameters have `{}`. */
export function objectSchema(parameters: JsonObject): JsonObject {
  return parameters["type"] === undefined ? { type: "object", properties: {}, ...parameters } : parameters;
}
