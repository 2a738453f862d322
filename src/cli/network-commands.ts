import type { CliContext, Json } from "./context.js";
import { formatTable, printJson, printLine, printTable, text } from "./output.js";
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

/**
 * `axon function <network>`: what the network takes, as sections separated by one blank line (each only when the
 * network declares it): its description, its parameters, the sly_data it reads and the sly_data it returns.
 */
export async function showFunction(context: CliContext, network: string): Promise<void> {
  const response = await new RestClient(context.url).get(`/api/v1/${encodeURIComponent(network)}/function`);
  if (context.json) return printJson(response);
  const fn = (response.function as Json | undefined) ?? {};
  const sections = [
    text(fn.description).trim().split("\n"),
    schemaTable("PARAMETER", fn.parameters),
    schemaTable("SLY_DATA IN", fn.sly_data_schema),
    schemaTable("SLY_DATA OUT", fn.sly_data_output_schema),
  ].filter((lines) => lines.join("") !== "");
  if (sections.length === 0) return printLine(`${network} declares no function`);
  const required = [fn.parameters, fn.sly_data_schema].some((schema) => ((schema as Json | undefined)?.required as unknown[] | undefined)?.length);
  if (required) sections.push(["* required"]);
  printLine(sections.map((lines) => lines.join("\n")).join("\n\n"));
}

/** The properties of a JSON schema object as table lines, required ones marked `*`; none for no properties. */
function schemaTable(heading: string, schema: unknown): string[] {
  const properties = ((schema as Json | undefined)?.properties as Record<string, Json> | undefined) ?? {};
  const required = new Set(((schema as Json | undefined)?.required as string[] | undefined) ?? []);
  const rows = Object.entries(properties).map(([name, property]) => [`${name}${required.has(name) ? "*" : ""}`, typeOf(property), firstLine(text(property.description))]);
  return rows.length === 0 ? [] : formatTable([heading, "TYPE", "DESCRIPTION"], rows);
}

function typeOf(property: Json): string {
  const choices = property.enum as unknown[] | undefined;
  return choices ? choices.map(text).join("|") : text(property.type);
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
  // Networks may hold cycles (bounded by max_steps at run time): a node already on the path is not expanded again.
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
