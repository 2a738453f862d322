import type { RegistryProblem } from "./problem.js";
import { SAFE_TOOL_NAME, safeToolName } from "./tool-names.js";

/** A served network that asks to be an MCP tool, as the manifest names it. */
export interface McpCandidate {
  name: string;
  /** The manifest's `mcp_name`, if it has one. */
  mcpName?: string;
  /** Where the entry was written, for the problems below. */
  manifestFile: string;
}

export interface McpToolNaming {
  /** Tool name -> network name, for the networks that got a name. */
  tools: Map<string, string>;
  /** A dropped network (an error, it stays served over the other APIs) or an unsafe `mcp_name` (a warning). */
  problems: RegistryProblem[];
}

/**
 * The tool name of each candidate, by neuro-san's rule: its `mcp_name` or its safe name. A name several networks want,
 * or one that is some public network's own name, goes to the network whose own name it is, else to the first in
 * sorted order; the others are not offered over MCP. A network's own name stays reserved for it because `tools/call`
 * also takes network names as they are.
 */
export function nameMcpTools(candidates: readonly McpCandidate[], publicNetworks: ReadonlySet<string>): McpToolNaming {
  const problems: RegistryProblem[] = [];
  const claims = new Map<string, McpCandidate[]>();
  for (const candidate of [...candidates].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    const toolName = candidate.mcpName ?? safeToolName(candidate.name);
    if (!SAFE_TOOL_NAME.test(toolName)) {
      problems.push({
        file: candidate.manifestFile,
        key: candidate.name,
        reason: `mcp_name ${JSON.stringify(toolName)} holds characters LLM providers refuse in a tool name; offered over MCP anyway`,
        severity: "warning",
      });
    }
    claims.set(toolName, [...(claims.get(toolName) ?? []), candidate]);
  }

  const tools = new Map<string, string>();
  for (const [toolName, claimants] of claims) {
    const owner = publicNetworks.has(toolName) ? claimants.find((candidate) => candidate.name === toolName) : claimants[0];
    if (owner !== undefined) tools.set(toolName, owner.name);
    for (const dropped of claimants.filter((candidate) => candidate !== owner)) {
      const holder = owner?.name ?? toolName;
      problems.push({
        file: dropped.manifestFile,
        key: dropped.name,
        reason: `MCP tool name ${toolName} belongs to network ${holder}; ${dropped.name} is not offered over MCP (still served over the other APIs)`,
      });
    }
  }
  return { tools, problems };
}
