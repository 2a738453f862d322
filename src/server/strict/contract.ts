import type { DescService } from "@bufbuild/protobuf";
import { AgentOperationsService } from "../../gen/axon/agent/v1/agent_pb.js";
import { OperatorService } from "../../gen/axon/operator/v1/operator_pb.js";

/**
 * Agent V1 and Operator V1 follow unYOLO's contract to the letter (agent-v1.md §11): strict JSON and query strings,
 * unYOLO's code words in errors, arrays always present, no caching. The neuro-san API stays lenient.
 */
const strictServiceNames = new Set([AgentOperationsService.typeName, OperatorService.typeName]);

export function isStrictService(service: DescService): boolean {
  return strictServiceNames.has(service.typeName);
}

/** Every answer of a strict service, errors included: operations and approvals are never cached or sniffed. */
export const strictResponseHeaders: Readonly<Record<string, string>> = {
  "cache-control": "no-store",
  "x-content-type-options": "nosniff",
};

/** A strict service's JSON body, whatever the server-wide limit: the submit body's bound (§2, §11). */
export const maxStrictBodyBytes = 2 * 1024 * 1024;
