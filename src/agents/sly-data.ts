import type { JsonObject } from "@bufbuild/protobuf";
import type { SlyDataGrant } from "./agent-network.js";

/**
 * Applies one direction of an `allow` policy to sly_data. Absent means deny (sly_data never crosses a
 * boundary by default); `true` lets everything through; a list lets those keys through; a map keeps
 * (`true`), drops (`false`) or renames (`"new_name"`) each key it names and drops the rest.
 */
export function filterSlyData(slyData: JsonObject, grant: SlyDataGrant | undefined): JsonObject {
  if (grant === undefined || grant === false) return {};
  if (grant === true) return structuredClone(slyData);
  const filtered: JsonObject = {};
  const entries: [string, boolean | string][] = Array.isArray(grant) ? grant.map((key) => [key, true]) : Object.entries(grant);
  for (const [key, rule] of entries) {
    if (rule === false || !(key in slyData)) continue;
    filtered[rule === true ? key : rule] = structuredClone(slyData[key]!);
  }
  return filtered;
}
