import type { ClientCredentials } from "./mcp-info.js";

interface CachedToken {
  accessToken: string;
  /** Milliseconds on `now`'s clock after which it is fetched again. */
  refreshAt: number;
}

/** A token is fetched again this long before it expires, so none is sent in its last seconds. */
const refreshMarginMs = 30_000;

/**
 * OAuth2 client-credentials tokens for MCP servers (RFC 6749 §4.4), one per server and client, kept until shortly
 * before they expire and then fetched again. Process-wide, so chats share a token rather than each fetching one.
 * Neither the secret nor the token is ever logged or put in an error message.
 */
export class ClientCredentialsTokens {
  private readonly tokens = new Map<string, Promise<CachedToken>>();

  constructor(private readonly now: () => number = Date.now) {}

  async accessToken(credentials: ClientCredentials, signal: AbortSignal): Promise<string> {
    const key = JSON.stringify([credentials.tokenEndpoint, credentials.clientId, credentials.scope ?? ""]);
    let token = this.tokens.get(key);
    if (token !== undefined) {
      const cached = await token.catch(() => undefined);
      if (cached === undefined || cached.refreshAt <= this.now()) token = undefined;
    }
    if (token === undefined) {
      token = this.fetchToken(credentials, signal);
      this.tokens.set(key, token);
      // A failed fetch is not remembered: the next chat asks again.
      token.catch(() => this.tokens.get(key) === token && this.tokens.delete(key));
    }
    return (await token).accessToken;
  }

  private async fetchToken(credentials: ClientCredentials, signal: AbortSignal): Promise<CachedToken> {
    const body = new URLSearchParams({ grant_type: "client_credentials" });
    if (credentials.scope !== undefined) body.set("scope", credentials.scope);
    const headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded", accept: "application/json" };
    if (credentials.authMethod === "client_secret_basic") {
      // RFC 6749 §2.3.1: both parts form-encoded before they are joined.
      const user = encodeURIComponent(credentials.clientId);
      const password = encodeURIComponent(credentials.clientSecret ?? "");
      headers.authorization = `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;
    } else {
      body.set("client_id", credentials.clientId);
      if (credentials.authMethod === "client_secret_post") body.set("client_secret", credentials.clientSecret ?? "");
    }
    const response = await fetch(credentials.tokenEndpoint, {
      method: "POST",
      headers,
      body,
      signal: AbortSignal.any([signal, AbortSignal.timeout(credentials.timeoutSeconds * 1000)]),
    });
    if (!response.ok) throw new Error(`the MCP server's token endpoint answered HTTP ${response.status}`);
    const answer = (await response.json().catch(() => undefined)) as { access_token?: unknown; expires_in?: unknown } | undefined;
    if (typeof answer?.access_token !== "string" || answer.access_token === "") throw new Error("the MCP server's token endpoint sent no access_token");
    // Without expires_in a token serves the chat that fetched it, and the next chat fetches another.
    const lifetimeMs = typeof answer.expires_in === "number" ? answer.expires_in * 1000 - refreshMarginMs : 0;
    return { accessToken: answer.access_token, refreshAt: this.now() + lifetimeMs };
  }
}
