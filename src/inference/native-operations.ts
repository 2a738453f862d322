import type { JsonObject } from "@bufbuild/protobuf";
import type { FieldViolation } from "../errors.js";
import type { Presentation } from "../operations/providers/provider.js";
import { printable, truncate } from "../operations/providers/transcript-text.js";

/** The policy operation of a brokered chat completion. */
export const chatOperation = "inference.chat";
/** The policy operation of listing an upstream's models. */
export const listOperation = "inference.models.list";

/**
 * The two native operations of `/v1`, as policy, grants (`POST /api/grants`) and operators see them: target
 * `{kind: "model", upstream, name}` (a listing names no model). Their calls are made by the routes, never submitted.
 */
export const inferenceOperations = [
  { operation: chatOperation, validateTarget: (target: JsonObject) => modelTargetViolations(target, true), present: presentChat },
  { operation: listOperation, validateTarget: (target: JsonObject) => modelTargetViolations(target, false), present: presentList },
];

/** The target of a chat completion with `name` on `upstream`. */
export function modelTarget(upstream: string, name: string): JsonObject {
  return { kind: "model", upstream, name };
}

/** The target of listing `upstream`'s models. */
export function upstreamTarget(upstream: string): JsonObject {
  return { kind: "model", upstream };
}

function modelTargetViolations(target: JsonObject, namesModel: boolean): FieldViolation[] {
  const violations: FieldViolation[] = [];
  const allowed = namesModel ? ["kind", "upstream", "name"] : ["kind", "upstream"];
  if (target.kind !== "model") violations.push({ field: "target.kind", description: 'must be "model"' });
  if (typeof target.upstream !== "string" || target.upstream === "") violations.push({ field: "target.upstream", description: "the upstream's name in the inference file" });
  if (namesModel && (typeof target.name !== "string" || target.name === "")) violations.push({ field: "target.name", description: "the model's name (a glob in a grant)" });
  for (const field of Object.keys(target)) if (!allowed.includes(field)) violations.push({ field: `target.${field}`, description: "not a field of a model target" });
  return violations;
}

function presentChat(target: JsonObject, detail: JsonObject): Presentation {
  const bound = typeof detail.max_tokens === "number" ? `, at most ${detail.max_tokens} tokens` : "";
  return {
    title: truncate(`Chat completion with ${printable(target.name)} on ${printable(target.upstream)}`, 160),
    summary: `${Number(detail.messages)} messages, ${Number(detail.body_bytes)} bytes${bound}${detail.stream === true ? ", streamed" : ""}`,
  };
}

function presentList(target: JsonObject): Presentation {
  return { title: truncate(`List the models of ${printable(target.upstream)}`, 160), summary: "" };
}
