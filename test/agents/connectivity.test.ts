import { describe, expect, it } from "vitest";

import { connectivityOf, functionOf, listingOf } from "../../src/agents/connectivity.js";
import type { JsonObject } from "../../src/agents/hocon.js";
import type { AgentNetwork } from "../../src/agents/agent-network.js";
import { buildNetwork } from "../../src/agents/network.js";

function build(tools: JsonObject[], extra: JsonObject = {}): AgentNetwork {
  return buildNetwork({ name: "example", file: "/networks/example.hocon", public: true, mcp: true, raw: { ...extra, tools } });
}

describe("connectivity", () => {
  it("lists the front man first, then depth-first in tools order, each node once", () => {
    const network = build([
      { name: "Front", tools: ["Left", "Right"] },
      { name: "Right", tools: ["Shared"] },
      { name: "Left", tools: ["Shared", "Deep"] },
      { name: "Deep" },
      { name: "Shared" },
    ]);
    expect(connectivityOf(network)).toEqual([
      { origin: "Front", tools: ["Left", "Right"], displayAs: "llm_agent" },
      { origin: "Left", tools: ["Shared", "Deep"], displayAs: "llm_agent" },
      { origin: "Shared", tools: [], displayAs: "llm_agent" },
      { origin: "Deep", tools: [], displayAs: "llm_agent" },
      { origin: "Right", tools: ["Shared"], displayAs: "llm_agent" },
    ]);
  });

  it("allows cycles and still lists every node once with all its tools", () => {
    const network = build([
      { name: "Front", tools: ["Ping"] },
      { name: "Ping", tools: ["Pong"] },
      { name: "Pong", tools: ["Ping", "Front"] },
    ]);
    expect(connectivityOf(network)).toEqual([
      { origin: "Front", tools: ["Ping"], displayAs: "llm_agent" },
      { origin: "Ping", tools: ["Pong"], displayAs: "llm_agent" },
      { origin: "Pong", tools: ["Ping", "Front"], displayAs: "llm_agent" },
    ]);
  });

  it("adds args.tools after tools, without duplicates", () => {
    const network = build([
      { name: "Front", tools: ["Router", "Helper", "Helper"] },
      { name: "Router", class: "router.Router", args: { tools: ["Helper", "Other", "Helper"] } },
      { name: "Helper" },
      { name: "Other" },
    ]);
    expect(connectivityOf(network)).toEqual([
      { origin: "Front", tools: ["Router", "Helper"], displayAs: "llm_agent" },
      { origin: "Router", tools: ["Helper", "Other"], displayAs: "coded_tool" },
      { origin: "Helper", tools: [], displayAs: "llm_agent" },
      { origin: "Other", tools: [], displayAs: "llm_agent" },
    ]);
  });

  it("shows external agents as written, with no tools", () => {
    const network = build([{ name: "Front", tools: ["/hello_world", "http://localhost:30012/other", "Front"] }]);
    expect(connectivityOf(network)).toEqual([
      { origin: "Front", tools: ["/hello_world", "http://localhost:30012/other", "Front"], displayAs: "llm_agent" },
      { origin: "/hello_world", tools: [], displayAs: "external_agent" },
      { origin: "http://localhost:30012/other", tools: [], displayAs: "external_agent" },
    ]);
  });

  it("keeps a node with allow.connectivity false but hides its tools and what only they reach", () => {
    const network = build([
      { name: "Front", tools: ["Secretive", "Open"] },
      { name: "Secretive", tools: ["Hidden", "Open"], allow: { connectivity: false } },
      { name: "Open", display_as: "open_agent" },
      { name: "Hidden" },
    ]);
    expect(connectivityOf(network)).toEqual([
      { origin: "Front", tools: ["Secretive", "Open"], displayAs: "llm_agent" },
      { origin: "Secretive", tools: [], displayAs: "llm_agent" },
      { origin: "Open", tools: [], displayAs: "open_agent" },
    ]);
  });

  it("leaves out specs the front man cannot reach", () => {
    const network = build([{ name: "Front" }, { name: "Orphan" }]);
    expect(connectivityOf(network).map((entry) => entry.origin)).toEqual(["Front"]);
  });
});

describe("function", () => {
  it("is the front man's function block", () => {
    const network = build([
      {
        name: "Front",
        function: {
          description: "Answers.",
          parameters: { type: "object", properties: { q: { type: "string" } } },
          sly_data_schema: { type: "object" },
          sly_data_output_schema: { type: "object", properties: { total: { type: "number" } } },
        },
      },
    ]);
    expect(functionOf(network)).toEqual({
      description: "Answers.",
      parameters: { type: "object", properties: { q: { type: "string" } } },
      slyDataSchema: { type: "object" },
      slyDataOutputSchema: { type: "object", properties: { total: { type: "number" } } },
    });
  });

  it("is empty when the front man has none", () => {
    expect(functionOf(build([{ name: "Front" }]))).toEqual({});
  });
});

describe("listing", () => {
  it("carries the network name, metadata description and tags", () => {
    const network = build([{ name: "Front" }], { metadata: { description: "Helps.", tags: ["x", "y"], other: 1 } });
    expect(listingOf(network)).toEqual({ agentName: "example", description: "Helps.", tags: ["x", "y"] });
  });
});
