import type { CliContext, Json } from "./context.js";
import { printJson, printLine, printTable, text } from "./output.js";
import { RestClient } from "./rest-client.js";

/** `axon list`: the public networks (ConciergeService.List over REST). */
export async function listNetworks(context: CliContext): Promise<void> {
  const response = await new RestClient(context.url).get("/api/v1/list");
  if (context.json) return printJson(response);
  const agents = (response.agents as Json[] | undefined) ?? [];
  printTable(
    ["NETWORK", "TAGS", "DESCRIPTION"],
    agents.map((agent) => [text(agent.agent_name), ((agent.tags as string[] | undefined) ?? []).join(","), firstLine(text(agent.description))]),
  );
}

/** `axon function <network>`: the front man's function block. */
export async function showFunction(context: CliContext, network: string): Promise<void> {
  const response = await new RestClient(context.url).get(`/api/v1/${encodeURIComponent(network)}/function`);
  if (context.json) return printJson(response);
  const fn = response.function as Json | undefined;
  if (!fn) return printLine(`${network} declares no function`);
  printLine(text(fn.description));
  const parameters = fn.parameters as Json | undefined;
  const properties = (parameters?.properties as Record<string, Json> | undefined) ?? {};
  const required = new Set((parameters?.required as string[] | undefined) ?? []);
  if (Object.keys(properties).length > 0) {
    printLine();
    printTable(
      ["PARAMETER", "TYPE", "DESCRIPTION"],
      Object.entries(properties).map(([name, schema]) => [`${name}${required.has(name) ? "*" : ""}`, text(schema.type), firstLine(text(schema.description))]),
    );
  }
  if (fn.sly_data_schema !== undefined) printLine(`\nsly_data schema: ${JSON.stringify(fn.sly_data_schema)}`);
}

/** `axon connectivity <network>`: the network's graph as a tree from the front man. */
export async function showConnectivity(context: CliContext, network: string): Promise<void> {
  const response = await new RestClient(context.url).get(`/api/v1/${encodeURIComponent(network)}/connectivity`);
  if (context.json) return printJson(response);
  const nodes = new Map<string, Json>();
  for (const info of (response.connectivity_info as Json[] | undefined) ?? []) nodes.set(text(info.origin), info);
  const front = nodes.keys().next().value;
  if (front === undefined) return printLine(`${network} has no nodes`);
  printTree(front, nodes, "", "", new Set());
}

function printTree(name: string, nodes: Map<string, Json>, prefix: string, branch: string, path: Set<string>): void {
  const node = nodes.get(name);
  const kind = node?.display_as === undefined ? "" : ` (${text(node.display_as)})`;
  // Networks may hold cycles (bounded by max_iterations at run time): a node already on the path is not expanded again.
  const cycle = path.has(name);
  printLine(`${prefix}${branch}${name}${kind}${cycle ? " ↺" : ""}`);
  if (cycle) return;
  const tools = (node?.tools as string[] | undefined) ?? [];
  const childPrefix = prefix + (branch === "" ? "" : branch === "└─ " ? "   " : "│  ");
  tools.forEach((tool, index) => printTree(tool, nodes, childPrefix, index === tools.length - 1 ? "└─ " : "├─ ", new Set([...path, name])));
}

function firstLine(value: string): string {
  const line = value.trim().split("\n")[0] ?? "";
  return line.length > 100 ? `${line.slice(0, 99)}…` : line;
}
