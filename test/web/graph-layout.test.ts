import { describe, expect, it } from "vitest";
import { labelLines, layoutGraph, nodeHeight, nodeWidth } from "../../web/src/graph-layout.js";

const entry = (origin: string, tools: string[] = [], displayAs = "llm_agent") => ({ origin, tools, displayAs });

describe("the connectivity graph layout", () => {
  it("puts the front man alone on top and each tool one layer below the first node reaching it", () => {
    const layout = layoutGraph([entry("Front", ["A", "B"]), entry("A", ["C"]), entry("B"), entry("C", [], "coded_tool")]);
    const layerOf = Object.fromEntries(layout.nodes.map((node) => [node.name, node.layer]));
    expect(layerOf).toEqual({ Front: 0, A: 1, B: 1, C: 2 });
    expect(layout.nodes.find((node) => node.name === "C")?.kind).toBe("coded_tool");
    expect(layout.edges).toEqual([
      { from: "Front", to: "A", back: false },
      { from: "Front", to: "B", back: false },
      { from: "A", to: "C", back: false },
    ]);
  });

  it("marks the edges of a cycle as back edges and still gives every node one place", () => {
    const layout = layoutGraph([entry("Nerd", ["Archivist", "Critic"]), entry("Archivist", ["Critic"]), entry("Critic", ["Archivist", "Nerd"])]);
    expect(layout.nodes.map((node) => node.name)).toEqual(["Nerd", "Archivist", "Critic"]);
    expect(layout.edges.filter((edge) => edge.back).map((edge) => `${edge.from}>${edge.to}`)).toEqual(["Archivist>Critic", "Critic>Archivist", "Critic>Nerd"]);
  });

  it("draws tools without an entry, and puts unreachable entries below the rest", () => {
    const layout = layoutGraph([entry("Front", ["/other_network"]), entry("Orphan")]);
    expect(layout.nodes.map((node) => [node.name, node.layer, node.kind])).toEqual([
      ["Front", 0, "llm_agent"],
      ["/other_network", 1, "unknown"],
      ["Orphan", 2, "llm_agent"],
    ]);
  });

  it("keeps nodes of a layer apart and inside the drawing", () => {
    const layout = layoutGraph([entry("Front", ["A", "B", "C"]), entry("A"), entry("B"), entry("C")]);
    const row = layout.nodes.filter((node) => node.layer === 1).sort((a, b) => a.x - b.x);
    for (let index = 1; index < row.length; index++) expect(row[index]!.x - row[index - 1]!.x).toBeGreaterThanOrEqual(nodeWidth);
    for (const node of layout.nodes) {
      expect(node.x - nodeWidth / 2).toBeGreaterThanOrEqual(0);
      expect(node.x + nodeWidth / 2).toBeLessThanOrEqual(layout.width);
      expect(node.y + nodeHeight / 2).toBeLessThanOrEqual(layout.height);
    }
  });

  it("wraps a long name or URL onto a second line instead of cutting it, and marks the front man", () => {
    expect(labelLines("Greeter")).toEqual(["Greeter"]);
    expect(labelLines("http://localhost:30012/other")).toEqual(["http://localhost:", "30012/other"]);
    expect(labelLines("https://agents.example.com/travel/desk")).toEqual(["https://agents.", "example.com/trave…"]);
    expect(labelLines("a_rather_long_agent_name")).toEqual(["a_rather_long_", "agent_name"]);
    expect(labelLines("x".repeat(50))).toEqual(["x".repeat(18), `${"x".repeat(17)}…`]);
    const layout = layoutGraph([entry("Front", ["http://localhost:30012/other"])]);
    expect(layout.nodes.map((node) => [node.name, node.front, node.label.length])).toEqual([
      ["Front", true, 1],
      ["http://localhost:30012/other", false, 2],
    ]);
  });

  it("draws nothing for no connectivity", () => {
    expect(layoutGraph([]).nodes).toEqual([]);
  });
});
