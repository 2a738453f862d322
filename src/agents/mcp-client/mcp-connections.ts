import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js";
import { withTraceMeta } from "../../telemetry/mcp-spans.js";
import type { ClientCredentialsTokens } from "./client-credentials.js";
import type { McpServerInfo } from "./mcp-info.js";
import type { RequestHeaders } from "./request-credentials.js";

/** What authenticates one chat's calls beyond the MCP info file's headers. */
export interface McpCredentials {
  /** The client's own headers for this request (sly_data `http_headers`): they win over the info file's. */
  requestHeaders?: RequestHeaders;
  /** Fetches OAuth2 tokens for servers whose info names client credentials. */
  tokens?: ClientCredentialsTokens;
}

/**
 * The MCP servers one chat talks to, over Streamable HTTP: each connected on first use and closed when the chat ends,
 * so no state outlives a request. Credentials as neuro-san applies them: headers (the request's over the info file's)
 * first; only without an Authorization header a client-credentials token.
 */
export class McpConnections {
  private readonly clients = new Map<string, Promise<Client>>();

  constructor(
    /** How to reach a server (its headers, its allowed tools), from the MCP info file. */
    readonly infoOf: (url: string) => McpServerInfo | undefined,
    /** Per request: the chat's deadline aborts it sooner. */
    private readonly timeoutMs: number,
    private readonly credentials: McpCredentials = {},
  ) {}

  /** Every tool the server offers (all pages). */
  async listTools(url: string, signal: AbortSignal): Promise<Tool[]> {
    const client = await this.clientOf(url, signal);
    const tools: Tool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor === undefined ? {} : { cursor }, { signal, timeout: this.timeoutMs });
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    return tools;
  }

  async callTool(url: string, name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<CallToolResult> {
    const client = await this.clientOf(url, signal);
    // The trace rides in `_meta` as well as in the HTTP headers: a server may read either.
    const meta = withTraceMeta();
    return (await client.callTool({ name, arguments: args, ...(meta && { _meta: meta }) }, undefined, { signal, timeout: this.timeoutMs })) as CallToolResult;
  }

  async close(): Promise<void> {
    const clients = [...this.clients.values()];
    this.clients.clear();
    await Promise.all(clients.map((client) => client.then((connected) => connected.close()).catch(() => undefined)));
  }

  private clientOf(url: string, signal: AbortSignal): Promise<Client> {
    let client = this.clients.get(url);
    if (client === undefined) {
      client = this.connect(url, signal);
      this.clients.set(url, client);
      // A failed connection is tried again by the next call, not remembered.
      client.catch(() => this.clients.delete(url));
    }
    return client;
  }

  private async connect(url: string, signal: AbortSignal): Promise<Client> {
    const headers = await this.headersFor(url, signal);
    // Loaded on the first connection, not at start: the SDK and its validators (zod, ajv) are ~250 modules.
    const [{ Client }, { StreamableHTTPClientTransport }] = await Promise.all([
      import("@modelcontextprotocol/sdk/client/index.js"),
      import("@modelcontextprotocol/sdk/client/streamableHttp.js"),
    ]);
    const client = new Client({ name: "axon", version: process.env.npm_package_version ?? "dev" });
    await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }), { signal, timeout: this.timeoutMs });
    return client;
  }

  private async headersFor(url: string, signal: AbortSignal): Promise<Record<string, string>> {
    const info = this.infoOf(url);
    const headers = { ...info?.headers, ...this.credentials.requestHeaders?.get(url) };
    const authorized = Object.keys(headers).some((name) => name.toLowerCase() === "authorization");
    if (!authorized && info?.clientCredentials && this.credentials.tokens) {
      headers.Authorization = `Bearer ${await this.credentials.tokens.accessToken(info.clientCredentials, signal)}`;
    }
    return headers;
  }
}

/** What an LLM gets back from a tool call: its text, else its structured content as JSON. */
export function resultText(result: CallToolResult): string {
  const texts = result.content.flatMap((item) => (item.type === "text" ? [item.text] : []));
  if (texts.length > 0) return texts.join("\n");
  return result.structuredContent === undefined ? "" : JSON.stringify(result.structuredContent);
}
