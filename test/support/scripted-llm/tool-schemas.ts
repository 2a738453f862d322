import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { isObject } from "./wire.js";

/** JSON Schema's type names: what OpenAI accepts in a function's parameters, and nothing else. */
const JSON_SCHEMA_TYPES = new Set(["string", "number", "integer", "boolean", "array", "object", "null"]);

/**
 * What OpenAI's chat completions answer, with 400, for a request whose tools' parameters are not valid JSON Schema
 * (a `"type": "float"`, say); undefined for a valid request. Its message names the function and where in its schema.
 */
export function invalidToolSchema(body: JsonObject): JsonObject | undefined {
  const tools = Array.isArray(body["tools"]) ? body["tools"] : [];
  for (const [index, tool] of tools.entries()) {
    const fn = isObject(tool) && isObject(tool["function"]) ? tool["function"] : {};
    const problem = schemaProblem(fn["parameters"] ?? { type: "object", properties: {} }, []);
    if (problem === undefined) continue;
    return {
      error: {
        message: `Invalid schema for function '${String(fn["name"])}': In context=(${problem.context.map((part) => `'${part}'`).join(", ")}), ${problem.reason}`,
        type: "invalid_request_error",
        param: `tools[${index}].function.parameters`,
        code: "invalid_function_parameters",
      },
    };
  }
  return undefined;
}

function schemaProblem(schema: JsonValue, context: string[]): { context: string[]; reason: string } | undefined {
  if (!isObject(schema)) return { context, reason: `${JSON.stringify(schema)} is not of type 'object', 'boolean'` };
  const type = schema["type"];
  for (const name of Array.isArray(type) ? type : type === undefined ? [] : [type]) {
    if (typeof name !== "string" || !JSON_SCHEMA_TYPES.has(name)) return { context, reason: `${JSON.stringify(name)} is not valid under any of the given schemas` };
  }
  const properties = schema["properties"];
  if (isObject(properties)) {
    for (const [name, property] of Object.entries(properties)) {
      const problem = schemaProblem(property, [...context, "properties", name]);
      if (problem) return problem;
    }
  }
  const items = schema["items"];
  if (items !== undefined) return schemaProblem(items, [...context, "items"]);
  return undefined;
}
