import { describe, expect, it } from "vitest";
import { connectivityOf } from "../../src/agents/connectivity.js";
import { readMcpInfo } from "../../src/agents/mcp-client/mcp-info.js";
import { safeToolName } from "../../src/agents/tool-names.js";
import { buildNetwork, isMcpServerUrl } from "../../src/agents/network.js";
import { RegistryProblemsError } from "../../src/agents/problem.js";

const FILE = "/networks/mcp.hocon";

describe("what is an MCP server", () => {
  it.each([
    "https://mcp.example.com/mcp",
    "https://mcp.example.com",
    "https://mcp.example.com:8443",
    "https://example.com/mcp/free",
    "https://example.com/v1/mcp/server",
    "http://localhost:8000/mcp/",
  ])("%s is one", (url) => {
    expect(isMcpServerUrl(url)).toBe(true);
  });

  it.each(["http://localhost:8080/math_guy", "https://example.com/mcpserver", "https://notmcp.example.com/x", "/mcp", "mcp"])("%s is not", (reference) => {
    expect(isMcpServerUrl(reference)).toBe(false);
  });
});

describe("MCP servers in an agent's tools", () => {
  const network = buildNetwork({
    name: "mcp",
    file: FILE,
    public: true,
    mcp: true,
    raw: {
      tools: [
        { name: "Front", instructions: "Help.", tools: ["https://mcp.example.com/mcp", { url: "http://tools.internal:9000/api", tools: ["lookup"] }, "Helper"] },
        { name: "Helper", instructions: "Assist.", tools: [{ url: "https://mcp.example.com/mcp", tools: null }] },
      ],
    },
  });

  it("by URL or as {url, tools}, each agent with the tools it may use", () => {
    expect(network.frontMan.tools).toEqual(["https://mcp.example.com/mcp", "http://tools.internal:9000/api", "Helper"]);
    expect(network.frontMan.mcpServers).toEqual([{ url: "https://mcp.example.com/mcp" }, { url: "http://tools.internal:9000/api", allowedTools: ["lookup"] }]);
    expect(network.nodes.get("Helper")?.mcpServers).toEqual([{ url: "https://mcp.example.com/mcp" }]);
  });

  it("each server is one node, shown in Connectivity without tools", () => {
    expect(connectivityOf(network)).toEqual([
      { origin: "Front", tools: ["https://mcp.example.com/mcp", "http://tools.internal:9000/api", "Helper"], displayAs: "llm_agent" },
      { origin: "https://mcp.example.com/mcp", tools: [], displayAs: "mcp_server" },
      { origin: "http://tools.internal:9000/api", tools: [], displayAs: "mcp_server" },
      { origin: "Helper", tools: ["https://mcp.example.com/mcp"], displayAs: "llm_agent" },
    ]);
  });

  it("never takes headers from the network file: keys other than url and tools are a warning", () => {
    const network = buildNetwork({
      name: "mcp",
      file: FILE,
      public: true,
      mcp: true,
      raw: { tools: [{ name: "Front", instructions: "Help.", tools: [{ url: "https://mcp.example.com", http_headers: { Authorization: "Bearer leaked" } }] }] },
    });
    expect(network.warnings).toEqual([
      {
        file: FILE,
        key: "tools[0].tools[0]",
        reason: "only url and tools are read here (headers come from the MCP info file); ignored http_headers",
        severity: "warning",
      },
    ]);
  });

  it("refuses a {url, tools} entry without an http(s) url, or with tools that are not names", () => {
    const build = (tools: unknown[]) =>
      buildNetwork({ name: "mcp", file: FILE, public: true, mcp: true, raw: { tools: [{ name: "Front", instructions: "Help.", tools: tools as never }] } });
    let error: unknown;
    try {
      build([{ url: "ftp://x/mcp" }, { url: "https://mcp.example.com", tools: "all" }]);
    } catch (thrown) {
      error = thrown;
    }
    expect((error as RegistryProblemsError).problems).toEqual([
      { file: FILE, key: "tools[0].tools[0]", reason: "must be a tool name, a URL or {url, tools} with an http(s) url" },
      { file: FILE, key: "tools[0].tools[1].tools", reason: "must be a list of the server's tool names, or null for all of them" },
    ]);
  });
});

describe("MCP tool names the LLM sees", () => {
  it("replace what providers refuse: / by __, anything else by _", () => {
    expect(safeToolName("deep/math_guy")).toBe("deep__math_guy");
    expect(safeToolName("files.read file")).toBe("files_read_file");
    expect(safeToolName("add")).toBe("add");
  });
});

describe("the MCP info file", () => {
  it("maps server URLs to headers, allowed tools and client credentials, warning about and skipping bad entries", () => {
    const { value, problems } = readMcpInfo(
      {
        "https://mcp.example.com/mcp": { http_headers: { Authorization: "Bearer t" }, tools: ["a"] },
        "https://oauth.example.com/v1/mcp": { mcp_client_info: { client_id: "c", client_secret: "s", scope: "x y" }, auth_timeout: 20 },
        "https://post.example.com/mcp": {
          mcp_client_info: { client_id: "c", client_secret: "s", token_endpoint_auth_method: "client_secret_post" },
          mcp_server_info: { token_endpoint: "https://idp.example.com/oauth/token" },
        },
        "https://secretless.example.com/mcp": { mcp_client_info: { client_id: "c" } },
        "http://plain/mcp": {},
        "not a url": { http_headers: {} },
        "https://bad.example.com/mcp": { http_headers: { "X-Count": 3 } },
      },
      "/config/mcp_info.hocon",
    );
    expect([...value]).toEqual([
      ["https://mcp.example.com/mcp", { headers: { Authorization: "Bearer t" }, tools: ["a"] }],
      [
        "https://oauth.example.com/v1/mcp",
        {
          headers: {},
          clientCredentials: {
            clientId: "c",
            clientSecret: "s",
            authMethod: "client_secret_basic",
            scope: "x y",
            tokenEndpoint: "https://oauth.example.com/token",
            timeoutSeconds: 20,
          },
        },
      ],
      [
        "https://post.example.com/mcp",
        {
          headers: {},
          clientCredentials: { clientId: "c", clientSecret: "s", authMethod: "client_secret_post", tokenEndpoint: "https://idp.example.com/oauth/token", timeoutSeconds: 300 },
        },
      ],
      ["http://plain/mcp", { headers: {} }],
    ]);
    expect(problems.map((problem) => [problem.key, problem.reason])).toEqual([
      ["https://secretless.example.com/mcp.mcp_client_info", "client_secret is required unless token_endpoint_auth_method is none"],
      ["not a url", "must be an MCP server's http(s) URL with {http_headers, tools}"],
      ["https://bad.example.com/mcp.http_headers", "must map header names to strings"],
    ]);
  });
});
