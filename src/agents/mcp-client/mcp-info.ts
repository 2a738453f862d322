import type { JsonObject } from "../hocon.js";
import type { RegistryProblem } from "../problem.js";
import { isJsonObject } from "../../json.js";

/** How to reach one MCP server, from the MCP info file: never from a network file, which ends up in git. */
export interface McpServerInfo {
  /** Sent with every request to the server (Authorization, X-API-Key, ...). */
  headers: Record<string, string>;
  /** The server's tools agents may use when their network file does not say. */
  tools?: string[];
}

export type McpInfo = ReadonlyMap<string, McpServerInfo>;

/** neuro-san's keys for OAuth flows, which Axon does not run: warned about, ignored. */
const UNSUPPORTED_KEYS = ["mcp_client_info", "mcp_server_info", "auth_timeout"];

/**
 * `AGENT_MCP_INFO_FILE` (neuro-san's format): server URL, exactly as networks write it -> `{http_headers, tools}`.
 * A bad entry is a warning and is skipped.
 */
export function readMcpInfo(raw: JsonObject, file: string): { value: McpInfo; problems: RegistryProblem[] } {
  const info = new Map<string, McpServerInfo>();
  const problems: RegistryProblem[] = [];
  const warn = (key: string, reason: string) => problems.push({ file, key, reason, severity: "warning" });
  for (const [url, entry] of Object.entries(raw)) {
    if (!/^https?:\/\//i.test(url) || !isJsonObject(entry)) {
      warn(url, "must be an MCP server's http(s) URL with {http_headers, tools}");
      continue;
    }
    const headers = entry["http_headers"] ?? {};
    if (!isJsonObject(headers) || !Object.values(headers).every((value) => typeof value === "string")) {
      warn(`${url}.http_headers`, "must map header names to strings");
      continue;
    }
    const tools = entry["tools"];
    if (tools !== undefined && tools !== null && !(Array.isArray(tools) && tools.every((tool) => typeof tool === "string"))) {
      warn(`${url}.tools`, "must be a list of the server's tool names");
      continue;
    }
    for (const key of UNSUPPORTED_KEYS.filter((key) => key in entry)) warn(`${url}.${key}`, "is not supported by Axon; ignored");
    info.set(url, { headers: headers as Record<string, string>, ...(Array.isArray(tools) ? { tools: tools as string[] } : {}) });
  }
  return { value: info, problems };
}
