import type { DescMethod, JsonObject, JsonValue } from "@bufbuild/protobuf";
import { isJsonObject } from "../../json.js";
import { ConnectivityResponseSchema, FunctionResponseSchema } from "../../gen/neuro_san/api/grpc/agent_pb.js";
import { ConciergeResponseSchema } from "../../gen/neuro_san/api/grpc/concierge_pb.js";

/**
 * neuro-san's HTTP server always sends some fields that canonical proto3 JSON leaves out when empty, and its HTTP
 * clients read them without checking: `"tools": []` on a Connectivity leaf, `"description": ""` and `"tags": []` on
 * a List entry, `{"function": {}}` for a front man without a function block. REST answers only: gRPC bytes stay proto3.
 */
export function withNeuroSanFields(method: DescMethod, json: JsonValue): JsonValue {
  const fill = fillers.get(method.output.typeName);
  return fill !== undefined && isJsonObject(json) ? fill(json) : json;
}

const fillers = new Map<string, (json: JsonObject) => JsonObject>([
  [FunctionResponseSchema.typeName, (json) => ({ function: {}, ...json })],
  [
    ConnectivityResponseSchema.typeName,
    (json) => ({ ...json, connectivity_info: objectsOf(json["connectivity_info"]).map((info) => ({ ...info, tools: info["tools"] ?? [] })) }),
  ],
  [
    ConciergeResponseSchema.typeName,
    (json) => ({
      ...json,
      agents: objectsOf(json["agents"]).map((agent) => ({ ...agent, description: agent["description"] ?? "", tags: agent["tags"] ?? [] })),
    }),
  ],
]);

function objectsOf(value: JsonValue | undefined): JsonObject[] {
  return Array.isArray(value) ? value.filter(isJsonObject) : [];
}
