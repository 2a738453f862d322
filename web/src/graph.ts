import { element, svgElement } from "./dom.js";
import { nodeHeight, nodeWidth, type GraphLayout } from "./graph-layout.js";

/** One shape per kind of node (`display_as`), the same in the graph and in its legend. */
interface Shape {
  label: string;
  /** An SVG path of a `width` × `height` box. */
  path(width: number, height: number): string;
}

const roundedBox = (width: number, height: number, radius: number) =>
  `M ${radius} 0 H ${width - radius} Q ${width} 0 ${width} ${radius} V ${height - radius} Q ${width} ${height} ${width - radius} ${height} H ${radius} Q 0 ${height} 0 ${height - radius} V ${radius} Q 0 0 ${radius} 0 Z`;

const SHAPES: Record<string, Shape> = {
  llm_agent: { label: "LLM agent", path: (w, h) => roundedBox(w, h, Math.min(10, h / 2)) },
  coded_tool: { label: "coded tool", path: (w, h) => `M ${h / 3} 0 H ${w - h / 3} L ${w} ${h / 2} L ${w - h / 3} ${h} H ${h / 3} L 0 ${h / 2} Z` },
  external_agent: { label: "another network", path: (w, h) => `M ${h / 3} 0 H ${w} L ${w - h / 3} ${h} H 0 Z` },
  langchain_tool: { label: "library tool", path: (w, h) => `M ${h / 4} 0 H ${w - h / 4} L ${w} ${h / 4} V ${h - h / 4} L ${w - h / 4} ${h} H ${h / 4} L 0 ${h - h / 4} V ${h / 4} Z` },
};
// Any other display_as (a network's own, such as ledger_tool): an ellipse, labelled with the name it gives.
const otherShape = (kind: string): Shape => ({
  label: kind.replaceAll("_", " "),
  path: (w, h) => `M 0 ${h / 2} A ${w / 2} ${h / 2} 0 1 0 ${w} ${h / 2} A ${w / 2} ${h / 2} 0 1 0 0 ${h / 2} Z`,
});
const shapeOf = (kind: string): Shape => SHAPES[kind] ?? otherShape(kind);
/** The class a kind is styled by: known kinds by name, every other one alike. */
const kindClass = (kind: string) => (kind in SHAPES ? kind : "other");

export interface NetworkGraph {
  /** The drawing and its legend. */
  root: HTMLElement;
  /** Marks the node that is working now (the last step of a message's origin); undefined clears it. */
  highlight(name: string | undefined): void;
}

/** Draws a layout as SVG: one `g.node` per node, one `path.edge` per edge, arrows pointing at the tool; a legend below. */
export function renderGraph(layout: GraphLayout): NetworkGraph {
  const svg = svgElement("svg", {
    viewBox: `0 0 ${layout.width} ${layout.height}`,
    width: layout.width,
    height: layout.height,
    role: "img",
    "aria-label": `agent network of ${layout.nodes.length} agents`,
  });
  // Shrunk to fit its pane, but never below three quarters of its size: a wider graph scrolls in its pane instead.
  // Set through the CSSOM: the console's Content-Security-Policy refuses style attributes.
  svg.style.minWidth = `${Math.round(layout.width * 0.75)}px`;
  const defs = svgElement("defs");
  const marker = svgElement("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 8, markerHeight: 8, orient: "auto-start-reverse" });
  marker.append(svgElement("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrow-head" }));
  defs.append(marker);
  svg.append(defs);

  const byName = new Map(layout.nodes.map((node) => [node.name, node]));
  for (const edge of layout.edges) {
    const from = byName.get(edge.from);
    const to = byName.get(edge.to);
    if (!from || !to) continue;
    let d: string;
    if (from.layer === to.layer) {
      // Within a layer: a curve below the row, deeper for right-to-left so a pair of opposite edges stays apart.
      const bottom = from.y + nodeHeight / 2;
      const depth = from.x < to.x ? 30 : 55;
      d = `M ${from.x} ${bottom} Q ${(from.x + to.x) / 2} ${bottom + depth * 2}, ${to.x} ${bottom}`;
    } else if (edge.back) {
      // A cycle: leave from the side and bow outwards, so it does not hide the downward edges.
      const side = to.x >= from.x ? 1 : -1;
      const startX = from.x + (side * nodeWidth) / 2;
      const endX = to.x + (side * nodeWidth) / 2;
      const bow = side > 0 ? Math.max(startX, endX) + 40 : Math.min(startX, endX) - 40;
      d = `M ${startX} ${from.y} C ${bow} ${from.y}, ${bow} ${to.y}, ${endX} ${to.y}`;
    } else {
      d = `M ${from.x} ${from.y + nodeHeight / 2} L ${to.x} ${to.y - nodeHeight / 2}`;
    }
    const path = svgElement("path", { d, class: edge.back ? "edge back" : "edge", "marker-end": "url(#arrow)" });
    path.dataset.from = edge.from;
    path.dataset.to = edge.to;
    svg.append(path);
  }

  const groups = new Map<string, SVGGElement>();
  for (const node of layout.nodes) {
    const group = svgElement("g", { class: `node ${kindClass(node.kind)}${node.front ? " front" : ""}`, transform: `translate(${node.x - nodeWidth / 2} ${node.y - nodeHeight / 2})` });
    group.dataset.name = node.name;
    group.dataset.kind = node.kind;
    const title = svgElement("title");
    title.textContent = `${node.name} (${shapeOf(node.kind).label}${node.front ? ", the front man" : ""})`;
    const label = svgElement("text", { x: nodeWidth / 2, y: nodeHeight / 2 - ((node.label.length - 1) * 15) / 2, "text-anchor": "middle", "dominant-baseline": "central" });
    node.label.forEach((line, index) => {
      const span = svgElement("tspan", { x: nodeWidth / 2, dy: index === 0 ? 0 : 15 });
      span.textContent = line;
      label.append(span);
    });
    group.append(title, svgElement("path", { d: shapeOf(node.kind).path(nodeWidth, nodeHeight), class: "shape" }), label);
    groups.set(node.name, group);
    svg.append(group);
  }

  let active: SVGGElement | undefined;
  return {
    root: element("figure", { class: "graph-figure" }, svg, legend(layout)),
    highlight(name) {
      active?.classList.remove("active");
      active = name === undefined ? undefined : groups.get(name);
      active?.classList.add("active");
    },
  };
}

/** The kinds of node this graph has, each with its shape; and the front man. */
function legend(layout: GraphLayout): HTMLElement {
  const kinds = [...new Set(layout.nodes.map((node) => node.kind))];
  const item = (kind: string, label: string, extraClass = "") => {
    const icon = svgElement("svg", { viewBox: "-1 -1 34 18", width: 34, height: 18, "aria-hidden": "true" });
    const group = svgElement("g", { class: `icon ${kindClass(kind)}${extraClass}` });
    group.append(svgElement("path", { d: shapeOf(kind).path(32, 16), class: "shape" }));
    icon.append(group);
    return element("li", { "data-kind": extraClass ? "front" : kind }, icon, label);
  };
  return element(
    "figcaption",
    { class: "legend" },
    element("ul", {}, item("llm_agent", "front man (you talk to it)", " front"), ...kinds.map((kind) => item(kind, shapeOf(kind).label))),
  );
}
