import { svgElement } from "./dom.js";
import { nodeHeight, nodeWidth, type GraphLayout } from "./graph-layout.js";

const maxLabel = 20;

/** Draws a layout as SVG: one `g.node` per node, one `path.edge` per edge, arrows pointing at the tool. */
export function renderGraph(layout: GraphLayout): SVGSVGElement {
  const svg = svgElement("svg", {
    viewBox: `0 0 ${layout.width} ${layout.height}`,
    width: layout.width,
    height: layout.height,
    role: "img",
    "aria-label": "agent network connectivity",
  });
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

  for (const node of layout.nodes) {
    const group = svgElement("g", { class: `node ${node.kind}`, transform: `translate(${node.x - nodeWidth / 2} ${node.y - nodeHeight / 2})` });
    group.dataset.name = node.name;
    const title = svgElement("title");
    title.textContent = `${node.name} (${node.kind})`;
    const label = svgElement("text", { x: nodeWidth / 2, y: nodeHeight / 2, "text-anchor": "middle", "dominant-baseline": "central" });
    label.textContent = node.name.length > maxLabel ? `${node.name.slice(0, maxLabel - 1)}…` : node.name;
    group.append(title, svgElement("rect", { width: nodeWidth, height: nodeHeight, rx: 6 }), label);
    svg.append(group);
  }
  return svg;
}
