import { describe, expect, it } from "vitest";
import { loadConfig } from "../src/config.js";

describe("neuro-san's environment variables", () => {
  it("AGENT_STREAM_KEEP_ALIVE_WITH_PROGRESS_INTERVAL_SECONDS sets the keep-alive; AGENT_HEARTBEAT_SECONDS is its alias", () => {
    expect(loadConfig({}).heartbeatSeconds).toBe(0);
    expect(loadConfig({ AGENT_HEARTBEAT_SECONDS: "7" }).heartbeatSeconds).toBe(7);
    expect(loadConfig({ AGENT_STREAM_KEEP_ALIVE_WITH_PROGRESS_INTERVAL_SECONDS: "5", AGENT_HEARTBEAT_SECONDS: "7" }).heartbeatSeconds).toBe(5);
  });

  it("AGENT_MANIFEST_FILE names several manifests separated by ':' or spaces, each against the project root", () => {
    expect(loadConfig({ AGENT_MANIFEST_FILE: "a/manifest.hocon::/etc/b.hocon" }, "/srv").manifestFile).toBe("/srv/a/manifest.hocon:/etc/b.hocon");
    expect(loadConfig({ AGENT_MANIFEST_FILE: "a/manifest.hocon /etc/b.hocon" }, "/srv").manifestFile).toBe("/srv/a/manifest.hocon:/etc/b.hocon");
  });

  it("AGENT_MCP_ENABLE is on unless false; AGENT_MCP_ONLY turns it on; anything else is refused", () => {
    expect(loadConfig({})).toMatchObject({ mcpEnable: true, mcpOnly: false });
    expect(loadConfig({ AGENT_MCP_ENABLE: "false" })).toMatchObject({ mcpEnable: false, mcpOnly: false });
    expect(loadConfig({ AGENT_MCP_ENABLE: "False", AGENT_MCP_ONLY: "true" })).toMatchObject({ mcpEnable: true, mcpOnly: true });
    expect(() => loadConfig({ AGENT_MCP_ONLY: "maybe" })).toThrow("AGENT_MCP_ONLY must be true or false");
  });
});
