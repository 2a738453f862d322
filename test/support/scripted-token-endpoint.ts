import { once } from "node:events";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** One token request, as received. */
export interface TokenRequest {
  headers: IncomingHttpHeaders;
  form: URLSearchParams;
}

/**
 * An OAuth2 token endpoint on 127.0.0.1, port 0: every POST gets a new token (`token-1`, `token-2`, ...) with the
 * `expires_in` the test sets. It records each request.
 */
export class ScriptedTokenEndpoint {
  readonly requests: TokenRequest[] = [];
  expiresIn: number | undefined = 3600;

  private constructor(
    private readonly server: Server,
    /** `http://127.0.0.1:<port>/token` */
    readonly url: string,
  ) {}

  static async start(): Promise<ScriptedTokenEndpoint> {
    const server = createServer();
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const { port } = server.address() as AddressInfo;
    const endpoint = new ScriptedTokenEndpoint(server, `http://127.0.0.1:${port}/token`);
    server.on("request", async (request, response) => {
      const chunks: Buffer[] = [];
      for await (const chunk of request) chunks.push(chunk as Buffer);
      endpoint.requests.push({ headers: request.headers, form: new URLSearchParams(Buffer.concat(chunks).toString("utf8")) });
      response.writeHead(200, { "content-type": "application/json" });
      const expiry = endpoint.expiresIn === undefined ? {} : { expires_in: endpoint.expiresIn };
      response.end(JSON.stringify({ access_token: `token-${endpoint.requests.length}`, token_type: "Bearer", ...expiry }));
    });
    return endpoint;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    this.server.close();
    await once(this.server, "close");
  }
}
