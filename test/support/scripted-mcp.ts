import { once } from "node:events";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import * as z from "zod";

/** A call one of the server's tools received. */
export interface McpCall {
  tool: string;
  arguments: Record<string, unknown>;
  headers: IncomingHttpHeaders;
  /** The request's `params._meta`, as it arrived. */
  meta: Record<string, unknown> | undefined;
}

/**
 * A real MCP server over Streamable HTTP (stateless, the SDK's own server) on 127.0.0.1, port 0, at `/mcp`, with a few
 * tools for the tests: `add` (a + b), `deep.echo` (a name LLM providers refuse), `fail` (an error result). It records the
 * headers of every HTTP request it gets and every tool call (with its `_meta`).
 */
export class ScriptedMcpServer {
  readonly requests: IncomingHttpHeaders[] = [];
  readonly calls: McpCall[] = [];

  private constructor(
    private readonly server: Server,
    /** `http://127.0.0.1:<port>/mcp` */
    readonly url: string,
  ) {}

  static async start(): Promise<ScriptedMcpServer> {
    const server = createServer();
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const { port } = server.address() as AddressInfo;
    const scripted = new ScriptedMcpServer(server, `http://127.0.0.1:${port}/mcp`);
    server.on("request", (request, response) => {
      scripted.requests.push(request.headers);
      if (request.url?.split("?", 1)[0] !== "/mcp" || request.method !== "POST") {
        response.writeHead(405).end();
        return;
      }
      // Stateless: a server and a transport per request.
      const mcp = scripted.mcpServer(request.headers);
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      response.on("close", () => void transport.close().then(() => mcp.close()));
      void mcp.connect(transport).then(() => transport.handleRequest(request, response));
    });
    return scripted;
  }

  reset(): void {
    this.requests.length = 0;
    this.calls.length = 0;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    this.server.close();
    await once(this.server, "close");
  }

  private mcpServer(headers: IncomingHttpHeaders): McpServer {
    const mcp = new McpServer({ name: "scripted", version: "1" });
    const record = (tool: string, args: Record<string, unknown>, { _meta }: { _meta?: Record<string, unknown> }) => this.calls.push({ tool, arguments: args, headers, meta: _meta });
    mcp.registerTool("add", { description: "Adds two numbers", inputSchema: { a: z.number(), b: z.number() } }, (args, extra) => {
      record("add", args, extra);
      return { content: [{ type: "text", text: String(args.a + args.b) }] };
    });
    mcp.registerTool("deep.echo", { description: "Says the text back", inputSchema: { text: z.string() } }, (args, extra) => {
      record("deep.echo", args, extra);
      return { content: [{ type: "text", text: `echo: ${args.text}` }] };
    });
    mcp.registerTool("fail", { description: "Always fails", inputSchema: { why: z.string() } }, (args, extra) => {
      record("fail", args, extra);
      return { isError: true, content: [{ type: "text", text: `refused: ${args.why}` }] };
    });
    return mcp;
  }
}
