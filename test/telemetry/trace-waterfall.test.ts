import { describe, expect, it } from "vitest";
import { renderWaterfall, type WaterfallSpan } from "../../scripts/trace-waterfall.js";

const ms = (value: number) => BigInt(Math.round(value * 1e6)) + 1_700_000_000_000_000_000n;

function span(spanId: string, parentSpanId: string, name: string, operation: string | undefined, startMs: number, endMs: number): WaterfallSpan {
  const attributes = operation === undefined ? { "rpc.system": "grpc" } : { "gen_ai.operation.name": operation };
  return { service: "axon", spanId, parentSpanId, name, attributes, startNs: ms(startMs), endNs: ms(endMs) };
}

// Given out of order: the waterfall orders them itself.
const spans = [
  span("c", "b", "chat gpt-4o-mini", "chat", 20, 40),
  span("d", "b", "execute_tool http://127.0.0.1:4711/far_net", "execute_tool", 50, 90),
  span("a", "client", "dev.example.AgentService/StreamingChat", undefined, 0, 100),
  span("b", "a", "invoke_agent near_net", "invoke_agent", 10, 95),
];

/** Each bar as [x, width, colour], in row order. */
function bars(svg: string): [number, number, string][] {
  return [...svg.matchAll(/<rect x="([\d.]+)" y="\d+" width="([\d.]+)" height="18" rx="2" fill="(#\w+)"\/>/g)].map((match) => [Number(match[1]), Number(match[2]), match[3]!]);
}

describe("the trace waterfall", () => {
  it("draws a row per span, parents first, children by start, each bar scaled to the trace and coloured by kind", () => {
    const svg = renderWaterfall(spans, "A trace");
    // The chart runs from x=330 to x=900 over the trace's 100 ms: 5.7 px a millisecond.
    expect(bars(svg)).toEqual([
      [330, 570, "#4e79a7"],
      [387, 484.5, "#59a14f"],
      [444, 114, "#f28e2b"],
      [615, 228, "#b07aa1"],
    ]);
    const labels = [...svg.matchAll(/<text x="(\d+)" y="\d+">([^<]+)<\/text>/g)].map((match) => [Number(match[1]), match[2]]).slice(0, 4);
    expect(labels).toEqual([
      [10, "AgentService/StreamingChat"],
      [24, "invoke_agent near_net"],
      [38, "chat gpt-4o-mini"],
      [38, "execute_tool http://…/far_net"],
    ]);
    expect(svg).toContain(">100 ms</text>");
    expect(svg).toContain(">20.0 ms</text>");
  });

  it("is the same picture for the same spans, whatever order they arrived in", () => {
    expect(renderWaterfall([...spans].reverse(), "A trace")).toBe(renderWaterfall(spans, "A trace"));
  });

  it("escapes what it writes as text", () => {
    expect(renderWaterfall([span("a", "", "execute_tool <a&b>", "execute_tool", 0, 1)], 'say "hi"')).toContain("execute_tool &lt;a&amp;b&gt;");
  });
});
