import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ClientCredentialsTokens } from "../../src/agents/mcp-client/client-credentials.js";
import type { ClientCredentials } from "../../src/agents/mcp-client/mcp-info.js";
import { takeMcpCredentials } from "../../src/agents/mcp-client/request-credentials.js";
import { ScriptedTokenEndpoint } from "../support/scripted-token-endpoint.js";

describe("OAuth2 client credentials for MCP servers", () => {
  let endpoint: ScriptedTokenEndpoint;
  let now = 0;
  const signal = new AbortController().signal;
  const credentials = (overrides: Partial<ClientCredentials> = {}): ClientCredentials => ({
    clientId: "axon client",
    clientSecret: "s3cret:&",
    authMethod: "client_secret_basic",
    scope: "tools:read tools:call",
    tokenEndpoint: endpoint.url,
    timeoutSeconds: 5,
    ...overrides,
  });

  beforeAll(async () => {
    endpoint = await ScriptedTokenEndpoint.start();
  });
  afterAll(() => endpoint.close());
  beforeEach(() => {
    endpoint.requests.length = 0;
    endpoint.expiresIn = 3600;
    now = 0;
  });

  it("fetches a token with HTTP Basic by default, then serves it from the cache until shortly before it expires", async () => {
    const tokens = new ClientCredentialsTokens(() => now);
    expect(await tokens.accessToken(credentials(), signal)).toBe("token-1");
    const [request] = endpoint.requests;
    expect(request!.headers.authorization).toBe(`Basic ${Buffer.from("axon%20client:s3cret%3A%26").toString("base64")}`);
    expect(Object.fromEntries(request!.form)).toEqual({ grant_type: "client_credentials", scope: "tools:read tools:call" });

    now = 3_500_000;
    expect(await tokens.accessToken(credentials(), signal)).toBe("token-1");
    expect(endpoint.requests).toHaveLength(1);
    now = 3_580_000; // within the last 30 s of its hour: refreshed
    expect(await tokens.accessToken(credentials(), signal)).toBe("token-2");
    expect(endpoint.requests).toHaveLength(2);
  });

  it("client_secret_post sends the credentials in the form; none sends the client id alone", async () => {
    const tokens = new ClientCredentialsTokens(() => now);
    await tokens.accessToken(credentials({ authMethod: "client_secret_post" }), signal);
    await tokens.accessToken(credentials({ authMethod: "none", clientId: "public" }), signal);
    const [post, none] = endpoint.requests;
    expect(post!.headers.authorization).toBeUndefined();
    expect(Object.fromEntries(post!.form)).toMatchObject({ client_id: "axon client", client_secret: "s3cret:&" });
    expect(none!.headers.authorization).toBeUndefined();
    expect(Object.fromEntries(none!.form)).toEqual({ grant_type: "client_credentials", client_id: "public", scope: "tools:read tools:call" });
  });

  it("a token without expires_in is fetched again for the next use; a refused fetch says so without the secret", async () => {
    endpoint.expiresIn = undefined;
    const tokens = new ClientCredentialsTokens(() => now);
    await tokens.accessToken(credentials(), signal);
    await tokens.accessToken(credentials(), signal);
    expect(endpoint.requests).toHaveLength(2);
    const refused = tokens.accessToken(credentials({ tokenEndpoint: `${endpoint.url.replace("/token", "")}:1/token` }), signal);
    await expect(refused).rejects.toThrow();
    await refused.catch((error: Error) => expect(error.message).not.toContain("s3cret"));
  });
});

describe("MCP credentials in sly_data", () => {
  it("are taken out before any node sees the sly_data; http_headers become the request's headers by server URL", () => {
    const { slyData, headers } = takeMcpCredentials({
      user: "ann",
      http_headers: { "https://mcp.example.com/mcp": { Authorization: "Bearer mine", "X-Count": 3 } },
      mcp_tokens: { "https://other/mcp": { access_token: "t" } },
    });
    expect(slyData).toEqual({ user: "ann" });
    expect([...headers]).toEqual([["https://mcp.example.com/mcp", { Authorization: "Bearer mine" }]]);
  });
});
