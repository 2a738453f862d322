/** What the waterfall reads of a span (test/support/otlp-receiver.ts's ReceivedSpan has it all). */
export interface WaterfallSpan {
  service: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  attributes: Record<string, unknown>;
  startNs: bigint;
  endNs: bigint;
}

type Kind = "rpc" | "agent" | "llm" | "tool" | "other";

const colours: Record<Kind, string> = { rpc: "#4e79a7", agent: "#59a14f", llm: "#f28e2b", tool: "#b07aa1", other: "#9c9c9c" };
const legend: [Kind, string][] = [
  ["rpc", "RPC (server span)"],
  ["agent", "agent (invoke_agent)"],
  ["llm", "model call (chat)"],
  ["tool", "tool (execute_tool)"],
];

const layout = { width: 990, top: 40, row: 26, bar: 18, labelX: 10, indent: 14, serviceX: 322, chartX: 330, chartRight: 900 };

function kindOf(span: WaterfallSpan): Kind {
  const operation = span.attributes["gen_ai.operation.name"];
  if (operation === "invoke_agent") return "agent";
  if (operation === "chat") return "llm";
  if (operation === "execute_tool") return "tool";
  return span.attributes["rpc.system"] === undefined ? "other" : "rpc";
}

/** Short enough for the label column: a service's package and a local port say nothing a reader needs. */
function shortName(name: string): string {
  return name.replace(/^[\w.]+\.(\w+\/\w+)$/, "$1").replace(/https?:\/\/[^/\s]+\//, "http://…/");
}

function escapeXml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

function milliseconds(ns: bigint): number {
  return Number(ns) / 1e6;
}

function formatMs(ms: number): string {
  return ms >= 100 ? `${ms.toFixed(0)} ms` : ms >= 10 ? `${ms.toFixed(1)} ms` : `${ms.toFixed(2)} ms`;
}

/** The spans depth first, each parent before its children, siblings in the order they started (then by name). */
function rows(spans: WaterfallSpan[]): { span: WaterfallSpan; depth: number }[] {
  const ids = new Set(spans.map((span) => span.spanId));
  const byStart = (a: WaterfallSpan, b: WaterfallSpan) => (a.startNs === b.startNs ? a.name.localeCompare(b.name) : a.startNs < b.startNs ? -1 : 1);
  const ordered: { span: WaterfallSpan; depth: number }[] = [];
  const visit = (span: WaterfallSpan, depth: number) => {
    ordered.push({ span, depth });
    for (const child of spans.filter((candidate) => candidate.parentSpanId === span.spanId).sort(byStart)) visit(child, depth + 1);
  };
  // A span whose parent is not among them (the client's, or one never exported) starts a tree of its own.
  for (const root of spans.filter((span) => !ids.has(span.parentSpanId)).sort(byStart)) visit(root, 0);
  return ordered;
}

/** A tick step of 1, 2 or 5 times a power of ten that gives four to ten ticks over `totalMs`. */
function tickStep(totalMs: number): number {
  const rough = totalMs / 6;
  const power = 10 ** Math.floor(Math.log10(rough));
  return [1, 2, 5, 10].map((factor) => factor * power).find((step) => totalMs / step <= 10)!;
}

/**
 * One trace as an SVG waterfall: a row per span, indented by its depth, a bar from its start to its end on a time axis
 * as long as the trace, labelled with its duration and coloured by kind (RPC, agent, model call, tool).
 */
export function renderWaterfall(spans: WaterfallSpan[], title: string): string {
  if (spans.length === 0) throw new Error("no spans to draw");
  const ordered = rows(spans);
  const start = spans.reduce((min, span) => (span.startNs < min ? span.startNs : min), spans[0]!.startNs);
  const end = spans.reduce((max, span) => (span.endNs > max ? span.endNs : max), spans[0]!.endNs);
  const totalMs = Math.max(milliseconds(end - start), 0.001);
  const scale = (layout.chartRight - layout.chartX) / totalMs;
  const x = (ns: bigint) => layout.chartX + milliseconds(ns - start) * scale;
  const axisY = layout.top + ordered.length * layout.row;
  const height = axisY + 66;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${layout.width}" height="${height}" viewBox="0 0 ${layout.width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${layout.width}" height="${height}" fill="#fff"/>`,
    `<text x="${layout.labelX}" y="22" font-size="14" font-weight="bold">${escapeXml(title)}</text>`,
  ];
  const step = tickStep(totalMs);
  for (let tick = 0; tick <= totalMs + 1e-9; tick += step) {
    const tickX = (layout.chartX + tick * scale).toFixed(1);
    out.push(`<line x1="${tickX}" y1="${layout.top - 6}" x2="${tickX}" y2="${axisY}" stroke="#ddd"/>`);
    out.push(`<text x="${tickX}" y="${axisY + 16}" fill="#666" text-anchor="middle">${Number(tick.toPrecision(6))} ms</text>`);
  }
  ordered.forEach(({ span, depth }, index) => {
    const rowTop = layout.top + index * layout.row;
    const textY = rowTop + 13;
    const left = x(span.startNs);
    const width = Math.max(x(span.endNs) - left, 1);
    const duration = formatMs(milliseconds(span.endNs - span.startNs));
    out.push(`<text x="${layout.labelX + depth * layout.indent}" y="${textY}">${escapeXml(shortName(span.name))}</text>`);
    out.push(`<text x="${layout.serviceX}" y="${textY}" fill="#888" text-anchor="end">${escapeXml(span.service)}</text>`);
    out.push(`<rect x="${left.toFixed(1)}" y="${rowTop}" width="${width.toFixed(1)}" height="${layout.bar}" rx="2" fill="${colours[kindOf(span)]}"/>`);
    // The chart stops short of the right edge, so the duration always fits beside the bar's end.
    out.push(`<text x="${(left + width + 4).toFixed(1)}" y="${textY}" fill="#333">${duration}</text>`);
  });
  let legendX = layout.labelX;
  for (const [kind, label] of legend) {
    out.push(`<rect x="${legendX}" y="${axisY + 32}" width="12" height="12" rx="2" fill="${colours[kind]}"/>`);
    out.push(`<text x="${legendX + 18}" y="${axisY + 42}">${escapeXml(label)}</text>`);
    legendX += 40 + label.length * 7;
  }
  out.push("</svg>", "");
  return out.join("\n");
}
