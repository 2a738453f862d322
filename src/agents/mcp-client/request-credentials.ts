import type { JsonObject } from "@bufbuild/protobuf";
import { isJsonObject } from "../../json.js";

/** Headers for MCP servers a client sent with one request, by server URL (neuro-san's sly_data `http_headers`). */
export type RequestHeaders = ReadonlyMap<string, Record<string, string>>;

/** neuro-san's sly_data keys for MCP credentials; `mcp_client_info` and `mcp_tokens` are taken out but not used. */
const CREDENTIAL_KEYS = ["http_headers", "mcp_client_info", "mcp_tokens"];

/**
 * Takes the MCP credentials out of a request's sly_data before any node sees it: they go to the MCP servers they name
 * and nowhere else, so no coded tool, `to_upstream`, `to_downstream` or log line can carry them on.
 */
export function takeMcpCredentials(slyData: JsonObject): { slyData: JsonObject; headers: RequestHeaders } {
  if (!CREDENTIAL_KEYS.some((key) => key in slyData)) return { slyData, headers: new Map() };
  const rest: JsonObject = {};
  for (const [key, value] of Object.entries(slyData)) if (!CREDENTIAL_KEYS.includes(key)) rest[key] = value;
  const headers = new Map<string, Record<string, string>>();
  const byUrl = slyData["http_headers"];
  if (isJsonObject(byUrl)) {
    for (const [url, values] of Object.entries(byUrl)) {
      if (!isJsonObject(values)) continue;
      const strings = Object.entries(values).filter((entry): entry is [string, string] => typeof entry[1] === "string");
      headers.set(url, Object.fromEntries(strings));
    }
  }
  return { slyData: rest, headers };
}
