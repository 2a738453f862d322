// A layered layout of a network's connectivity: the front man (the first entry) on top, each node one layer below
// the first node that reaches it. Pure, so it is tested without a browser.

export interface ConnectivityEntry {
  origin: string;
  tools: readonly string[];
  displayAs: string;
}

export interface PlacedNode {
  name: string;
  kind: string;
  /** The node's name in at most two lines that fit its box: long names and URLs wrap rather than being cut. */
  label: string[];
  /** The front man: the node the user talks to. */
  front: boolean;
  layer: number;
  /** Centre of the node's box. */
  x: number;
  y: number;
}

export interface PlacedEdge {
  from: string;
  to: string;
  /** Points to the same or an upper layer: part of a cycle, drawn apart from the downward edges. */
  back: boolean;
}

export interface GraphLayout {
  nodes: PlacedNode[];
  edges: PlacedEdge[];
  width: number;
  height: number;
}

export const nodeWidth = 124;
export const nodeHeight = 44;
/** Characters of the 13 px label font that fit on one line of a node. */
export const labelLineLength = 18;
const horizontalGap = 18;
const verticalGap = 56;
const margin = 12;

export function layoutGraph(entries: readonly ConnectivityEntry[]): GraphLayout {
  const kinds = new Map<string, string>();
  for (const entry of entries) kinds.set(entry.origin, entry.displayAs);
  // A tool with no entry of its own still gets a node.
  for (const entry of entries) for (const tool of entry.tools) if (!kinds.has(tool)) kinds.set(tool, "unknown");
  const toolsOf = new Map(entries.map((entry) => [entry.origin, entry.tools]));

  // Breadth first from the front man: a node's layer is its shortest distance from it.
  const layers = new Map<string, number>();
  const front = entries[0]?.origin;
  if (front !== undefined) {
    layers.set(front, 0);
    const queue = [front];
    for (let name = queue.shift(); name !== undefined; name = queue.shift()) {
      for (const tool of toolsOf.get(name) ?? []) {
        if (layers.has(tool)) continue;
        layers.set(tool, layers.get(name)! + 1);
        queue.push(tool);
      }
    }
  }
  // Nodes the front man cannot reach go below everything else.
  const unreachedLayer = Math.max(-1, ...layers.values()) + 1;
  for (const name of kinds.keys()) if (!layers.has(name)) layers.set(name, unreachedLayer);

  const rows: string[][] = [];
  for (const [name, layer] of layers) (rows[layer] ??= []).push(name);
  const widest = Math.max(1, ...rows.map((row) => row?.length ?? 0));
  const width = margin * 2 + widest * nodeWidth + (widest - 1) * horizontalGap;
  const sameLayer = (layer: number) => entries.some((entry) => layers.get(entry.origin) === layer && entry.tools.some((tool) => layers.get(tool) === layer));
  // An edge within the last layer bows below it (graph.ts): leave it room.
  const bowRoom = sameLayer(rows.length - 1) ? verticalGap : 0;
  const height = margin * 2 + rows.length * nodeHeight + Math.max(0, rows.length - 1) * verticalGap + bowRoom;

  const nodes: PlacedNode[] = [];
  rows.forEach((row = [], layer) => {
    const rowWidth = row.length * nodeWidth + (row.length - 1) * horizontalGap;
    const left = (width - rowWidth) / 2;
    row.forEach((name, index) => {
      nodes.push({
        name,
        kind: kinds.get(name)!,
        label: labelLines(name),
        front: name === front,
        layer,
        x: left + index * (nodeWidth + horizontalGap) + nodeWidth / 2,
        y: margin + layer * (nodeHeight + verticalGap) + nodeHeight / 2,
      });
    });
  });

  const edges = entries.flatMap((entry) =>
    entry.tools.map((tool) => ({ from: entry.origin, to: tool, back: layers.get(tool)! <= layers.get(entry.origin)! })),
  );
  return { nodes, edges, width, height };
}

/**
 * A name in one or two lines of at most `labelLineLength` characters, broken before the last path `/` or after the
 * last `_`, `-`, `.`, `:` or space that fits (`http://localhost:` then `30012/other`); only a name too long for two
 * lines ends with an ellipsis.
 */
export function labelLines(name: string): string[] {
  if (name.length <= labelLineLength) return [name];
  let cut = labelLineLength;
  for (let index = labelLineLength; index > 0; index--) {
    const before = name[index - 1]!;
    const pathSlash = name[index] === "/" && before !== "/" && before !== ":";
    if (pathSlash || (index < labelLineLength && "_-.: ".includes(before))) {
      cut = index;
      break;
    }
  }
  const rest = name.slice(cut).trimStart();
  return [name.slice(0, cut).trimEnd(), rest.length <= labelLineLength ? rest : `${rest.slice(0, labelLineLength - 1)}…`];
}
