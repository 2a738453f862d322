import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { credentialsOf, type Authenticator } from "../server/authenticate.js";
import { leavesUnreadBody, requestOrigin } from "../server/http-request.js";
import type { IntakeBudget } from "../server/intake-budget.js";
import type { HttpRequest, HttpResponse } from "../server/listener.js";
import { readRequestBody } from "../server/request-body.js";
import { writeStatusError } from "../server/rest/http-response.js";
import { toConnectError } from "../server/status.js";
import { isJsonObject } from "../json.js";
import { createMcpServer, type McpDeps } from "./mcp-server.js";

export interface McpHandlerOptions extends McpDeps {
  /** A bearer (or a client certificate) names the client whose operation tools are listed beside the network tools. */
  authenticator: Pick<Authenticator, "client">;
  /** Aborted when the server shuts down: open waits and chats end with it. */
  shutdownSignal?: AbortSignal;
  /** Largest JSON-RPC body accepted, in bytes (default 4 MiB). */
  maxRequestBytes?: number;
  /** The server's cap on unauthenticated bodies held at once; a call without a bearer counts against it. */
  intake?: IntakeBudget;
}

export interface McpHandler {
  /** Serves `/mcp` and answers true; any other path is left alone and answers false. */
  handle(req: HttpRequest, res: HttpResponse): Promise<boolean>;
}

export const mcpPath = "/mcp";

/** neuro-san's MCP version: what an `initialize` that names none is answered with. */
const neuroSanProtocolVersion = "2025-06-18";

/**
 * Streamable HTTP at `/mcp`, stateless as neuro-san serves it: every POST gets its own MCP server and transport, and
 * no session is kept, so nothing is shared between replicas and nothing expires. Network tools need no token; a bearer
 * client secret adds that client's operation tools. The answer is one JSON body unless the client lists
 * `text/event-stream` in Accept.
 */
export function createMcpHandler(options: McpHandlerOptions): McpHandler {
  return {
    async handle(req, res) {
      const path = (req.url ?? "/").split("?", 1)[0];
      if (path !== mcpPath) return false;
      // A bearer that names no client is refused before anything else, with the same 401 as the rest of Axon.
      let clientId: string | undefined;
      try {
        // With no bearer, a client certificate may name the client; a caller named by neither is anonymous.
        const credentials = credentialsOf(req);
        clientId =
          credentials.authorization === undefined
            ? await options.authenticator.client(credentials).then((client) => client.name, () => undefined)
            : (await options.authenticator.client(credentials)).name;
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
      let body: unknown;
      try {
        const maxBytes = options.maxRequestBytes ?? 4 * 1024 * 1024;
        const tally = clientId === undefined ? options.intake?.tally() : undefined;
        body = parsedBody(await readRequestBody(req, maxBytes, { tally }));
      } catch (error) {
        const status = toConnectError(error);
        writeStatusError(res, status, { headers: status.metadata, close: leavesUnreadBody(req) });
        return true;
      }
      await serve(req, res, body, clientId, options);
      return true;
    },
  };
}

async function serve(req: HttpRequest, res: HttpResponse, body: unknown, clientId: string | undefined, options: McpHandlerOptions): Promise<void> {
  const gone = new AbortController();
  res.on("close", () => gone.abort());
  const signal = options.shutdownSignal ? AbortSignal.any([gone.signal, options.shutdownSignal]) : gone.signal;

  const server = createMcpServer(options, { clientId, signal });
  const accept = String(req.headers.accept ?? "");
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: !accept.includes("text/event-stream"),
  });
  try {
    await server.connect(transport);
    const response = await transport.handleRequest(toWebRequest(req, signal), body === undefined ? {} : { parsedBody: body });
    res.writeHead(response.status, Object.fromEntries(response.headers));
    if (response.body) await pipeline(Readable.fromWeb(response.body as NodeReadableStream), res);
    else res.end();
  } finally {
    await server.close();
  }
}

/**
 * The JSON-RPC message, or undefined when the body is no JSON (the SDK answers that with its parse error). neuro-san's
 * documented curl exchange sends an `initialize` without params (what is missing gets its defaults) and
 * `notifications/initialized` with an id (a notification by its method all the same: 202, no answer).
 */
function parsedBody(bytes: Uint8Array): unknown {
  let message: unknown;
  try {
    message = JSON.parse(Buffer.from(bytes).toString("utf8"));
  } catch {
    return undefined;
  }
  if (isJsonObject(message) && message.method === "initialize") {
    const params = isJsonObject(message.params) ? message.params : {};
    message.params = { protocolVersion: neuroSanProtocolVersion, capabilities: {}, clientInfo: { name: "unnamed", version: "0" }, ...params };
  }
  if (isJsonObject(message) && typeof message.method === "string" && message.method.startsWith("notifications/")) delete message.id;
  return message;
}

/** The Node request (HTTP/1.1 or HTTP/2) as the web-standard Request the SDK's transport reads; its body is read. */
function toWebRequest(req: HttpRequest, signal: AbortSignal): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    // HTTP/2 pseudo-headers (:path, :method, ...) are not headers a Request may carry.
    if (name.startsWith(":") || value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
  }
  // The SDK insists on both; which of the two is answered was chosen from the client's own Accept above.
  headers.set("accept", "application/json, text/event-stream");
  // The SDK reads the URL for nothing but `requestInfo`, on the server's fixed origin. Host is not checked against a
  // list either: DNS rebinding reaches nothing here that a direct call could not.
  return new Request(new URL(req.url ?? mcpPath, requestOrigin), { method: "POST", headers, signal });
}
