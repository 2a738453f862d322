import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { credentialsOf, type Authenticator } from "../server/authenticate.js";
import { leavesUnreadBody, requestOrigin } from "../server/http-request.js";
import type { HttpRequest, HttpResponse } from "../server/listener.js";
import { writeStatusError } from "../server/rest/http-response.js";
import { toConnectError } from "../server/status.js";
import { createMcpServer, type McpDeps } from "./mcp-server.js";

export interface McpHandlerOptions extends McpDeps {
  /** The client a bearer (or client certificate) names scopes every tool. */
  authenticator: Pick<Authenticator, "client">;
  /** Aborted when the server shuts down: open waits and chats end with it. */
  shutdownSignal?: AbortSignal;
  /** Largest JSON-RPC body accepted, in bytes (default 4 MiB). */
  maxRequestBytes?: number;
}

export interface McpHandler {
  /** Serves `/mcp` and answers true; any other path is left alone and answers false. */
  handle(req: HttpRequest, res: HttpResponse): Promise<boolean>;
}

export const mcpPath = "/mcp";

/**
 * Streamable HTTP at `/mcp`, stateless: every POST gets its own MCP server and transport for the client its bearer
 * secret names, and a JSON answer. No sessions means nothing to share between replicas and nothing to expire.
 */
export function createMcpHandler(options: McpHandlerOptions): McpHandler {
  return {
    async handle(req, res) {
      const path = (req.url ?? "/").split("?", 1)[0];
      if (path !== mcpPath) return false;
      // Authentication comes before every other check, with the same 401 as the rest of Axon.
      let clientId: string;
      try {
        clientId = (await options.authenticator.client(credentialsOf(req))).name;
      } catch (error) {
        const status = toConnectError(error);
        writeStatusError(res, status, { headers: status.metadata, close: leavesUnreadBody(req) });
        return true;
      }
      // Stateless: there is no stream to resume (GET) and no session to end (DELETE).
      if (req.method !== "POST") {
        res.writeHead(405, { allow: "POST", "content-type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message: "Method not allowed: this server is stateless, POST only" }, id: null }));
        return true;
      }
      await serve(req, res, clientId, options);
      return true;
    },
  };
}

async function serve(req: HttpRequest, res: HttpResponse, clientId: string, options: McpHandlerOptions): Promise<void> {
  const gone = new AbortController();
  res.on("close", () => gone.abort());
  const signal = options.shutdownSignal ? AbortSignal.any([gone.signal, options.shutdownSignal]) : gone.signal;

  const server = createMcpServer(options, { clientId, signal });
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
    maxRequestBodySize: options.maxRequestBytes ?? 4 * 1024 * 1024,
  });
  try {
    await server.connect(transport);
    const response = await transport.handleRequest(toWebRequest(req, signal));
    res.writeHead(response.status, Object.fromEntries(response.headers));
    if (response.body) await pipeline(Readable.fromWeb(response.body as NodeReadableStream), res);
    else res.end();
  } finally {
    await server.close();
  }
}

/** The Node request (HTTP/1.1 or HTTP/2) as the web-standard Request the SDK's transport reads. */
function toWebRequest(req: HttpRequest, signal: AbortSignal): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    // HTTP/2 pseudo-headers (:path, :method, ...) are not headers a Request may carry.
    if (name.startsWith(":") || value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
  }
  const init: RequestInit & { duplex: "half" } = {
    method: req.method ?? "POST",
    headers,
    signal,
    duplex: "half",
    ...(req.method === "POST" ? { body: Readable.toWeb(req as Readable) as ReadableStream } : {}),
  };
  // The SDK reads the URL for nothing but `requestInfo`, on the server's fixed origin. Host is not checked against a
  // list either: DNS rebinding needs a server that answers without credentials, and every call here needs a secret.
  return new Request(new URL(req.url ?? mcpPath, requestOrigin), init);
}
