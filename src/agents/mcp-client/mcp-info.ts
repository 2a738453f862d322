import type { JsonObject } from "../hocon.js";
import type { RegistryProblem } from "../problem.js";
import { isJsonObject } from "../../json.js";

/** How to reach one MCP server, from the MCP info file: never from a network file, which ends up in git. */
export interface McpServerInfo {
  /** Sent with every request to the server (Authorization, X-API-Key, ...). */
  headers: Record<string, string>;
  /** The server's tools agents may use when their network file does not say. */
  tools?: string[];
  /** OAuth2 client credentials (`mcp_client_info`): a token is fetched when no Authorization header is configured. */
  clientCredentials?: ClientCredentials;
}

/** neuro-san's `mcp_client_info`, `mcp_server_info.token_endpoint` and `auth_timeout` of one server. */
export interface ClientCredentials {
  clientId: string;
  clientSecret?: string;
  /** How the client authenticates at the token endpoint (RFC 6749 §2.3); neuro-san's default is Basic. */
  authMethod: "client_secret_basic" | "client_secret_post" | "none";
  scope?: string;
  tokenEndpoint: string;
  timeoutSeconds: number;
}

export type McpInfo = ReadonlyMap<string, McpServerInfo>;

const AUTH_METHODS = ["client_secret_basic", "client_secret_post", "none"] as const;

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
    const credentials = clientCredentialsOf(url, entry);
    if (typeof credentials === "string") {
      warn(`${url}.mcp_client_info`, credentials);
      continue;
    }
    info.set(url, {
      headers: headers as Record<string, string>,
      ...(Array.isArray(tools) ? { tools: tools as string[] } : {}),
      ...(credentials === undefined ? {} : { clientCredentials: credentials }),
    });
  }
  return { value: info, problems };
}

/** The entry's client credentials, none, or what is wrong with them. */
function clientCredentialsOf(url: string, entry: JsonObject): ClientCredentials | undefined | string {
  const client = entry["mcp_client_info"];
  if (client === undefined || client === null) return undefined;
  if (!isJsonObject(client) || typeof client["client_id"] !== "string") return "must hold a client_id string";
  const method = client["token_endpoint_auth_method"] ?? "client_secret_basic";
  const authMethod = method === null || method === "None" ? "none" : method;
  if (!AUTH_METHODS.includes(authMethod as ClientCredentials["authMethod"])) return `token_endpoint_auth_method must be one of ${AUTH_METHODS.join(", ")}`;
  const secret = client["client_secret"];
  if (authMethod !== "none" && typeof secret !== "string") return "client_secret is required unless token_endpoint_auth_method is none";
  const scope = client["scope"];
  if (scope !== undefined && typeof scope !== "string") return "scope must be a space-separated string";
  const server = entry["mcp_server_info"];
  const endpoint = isJsonObject(server) ? server["token_endpoint"] : undefined;
  if (endpoint !== undefined && typeof endpoint !== "string") return "mcp_server_info.token_endpoint must be a URL";
  const timeout = entry["auth_timeout"] ?? 300;
  if (typeof timeout !== "number" || !(timeout > 0)) return "auth_timeout must be a number of seconds";
  return {
    clientId: client["client_id"],
    ...(typeof secret === "string" ? { clientSecret: secret } : {}),
    authMethod: authMethod as ClientCredentials["authMethod"],
    ...(scope === undefined ? {} : { scope }),
    // neuro-san falls back to the server's own /token when the file names no endpoint.
    tokenEndpoint: endpoint ?? new URL("/token", url).href,
    timeoutSeconds: timeout,
  };
}
