import { describe, expect, it } from "vitest";
import { nameMcpTools, type McpCandidate } from "../../src/agents/mcp-tool-names.js";
import { safeToolName } from "../../src/agents/tool-names.js";

const manifestFile = "/registries/manifest.hocon";
const candidate = (name: string, mcpName?: string): McpCandidate => ({ name, manifestFile, ...(mcpName === undefined ? {} : { mcpName }) });
const toolsOf = (candidates: McpCandidate[], publicNetworks: string[] = candidates.map((entry) => entry.name)) =>
  nameMcpTools(candidates, new Set(publicNetworks));

describe("MCP tool names of networks", () => {
  it("a folder's slash becomes two underscores and every other unsafe character one underscore", () => {
    expect(safeToolName("deep/math_guy")).toBe("deep__math_guy");
    expect(safeToolName("Agent.1")).toBe("Agent_1");
    expect(safeToolName("SAP SD Assistant")).toBe("SAP_SD_Assistant");
    expect(safeToolName("hello-world_2")).toBe("hello-world_2");
  });

  it("the manifest's mcp_name is the tool name; an unsafe one is offered anyway, with a warning", () => {
    const { tools, problems } = toolsOf([candidate("renamed", "greeter"), candidate("odd", "odd name")]);
    expect([...tools]).toEqual([
      ["odd name", "odd"],
      ["greeter", "renamed"],
    ]);
    expect(problems).toEqual([{ file: manifestFile, key: "odd", reason: expect.stringContaining("offered over MCP anyway"), severity: "warning" }]);
  });

  it("a public network keeps its own name against a network whose safe name or mcp_name is the same", () => {
    const { tools, problems } = toolsOf([candidate("a/b"), candidate("a__b"), candidate("z", "a__b")]);
    expect([...tools]).toEqual([["a__b", "a__b"]]);
    expect(problems.map((problem) => [problem.key, problem.severity])).toEqual([
      ["a/b", undefined],
      ["z", undefined],
    ]);
    expect(problems[0]!.reason).toContain("belongs to network a__b");
  });

  it("a public network's own name is taken from others even when it is no MCP tool itself", () => {
    const { tools, problems } = toolsOf([candidate("x", "hidden_tool")], ["x", "hidden_tool"]);
    expect(tools.size).toBe(0);
    expect(problems).toHaveLength(1);
  });

  it("when no network's own name is at stake the first in sorted order keeps the name", () => {
    const { tools, problems } = toolsOf([candidate("b.x"), candidate("b x")]);
    expect([...tools]).toEqual([["b_x", "b x"]]);
    expect(problems.map((problem) => problem.key)).toEqual(["b.x"]);
  });
});
