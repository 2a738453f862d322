import { describe, expect, it } from "vitest";
import { connectivityOf } from "../../src/agents/connectivity.js";
import type { JsonObject } from "../../src/agents/hocon.js";
import type { AgentNetwork } from "../../src/agents/agent-network.js";
import { buildNetwork } from "../../src/agents/network.js";
import { RegistryProblemsError, type RegistryProblem } from "../../src/agents/problem.js";
import { GetCurrentDateTime } from "../../src/agents/toolbox/current-date-time.js";
import { DEFAULT_TOOLBOX } from "../../src/agents/toolbox/default-toolbox.js";
import { readToolboxInfo } from "../../src/agents/toolbox/toolbox-info.js";

const FILE = "/networks/shelf.hocon";
const TOOLBOX_FILE = "/config/toolbox_info.hocon";

const toolbox = readToolboxInfo(
  {
    search: { class: "langchain_community.tools.tavily_search.TavilySearchResults", args: { max_results: 5, topic: "news" } },
    counter: { class: "words.WordCounter", description: "Counts words", parameters: { type: "object", properties: { text: { type: "string" } } } },
    branded: { class: "words.WordCounter", description: "Counts, branded", display_as: "counter" },
  },
  TOOLBOX_FILE,
  DEFAULT_TOOLBOX,
).value;

function build(tools: JsonObject[]): AgentNetwork {
  return buildNetwork({ name: "shelf", file: FILE, public: true, mcp: true, raw: { tools }, toolbox });
}

function problemsOf(tools: JsonObject[]): RegistryProblem[] {
  try {
    build(tools);
  } catch (error) {
    expect(error).toBeInstanceOf(RegistryProblemsError);
    return (error as RegistryProblemsError).problems;
  }
  throw new Error("expected the network to be invalid");
}

describe("toolbox info files", () => {
  it("an entry with a description is a coded tool, any other a library tool", () => {
    expect(toolbox.get("counter")).toEqual({
      kind: "coded",
      className: "words.WordCounter",
      description: "Counts words",
      parameters: { type: "object", properties: { text: { type: "string" } } },
    });
    expect(toolbox.get("search")).toEqual({
      kind: "library",
      className: "langchain_community.tools.tavily_search.TavilySearchResults",
      args: { max_results: 5, topic: "news" },
    });
  });

  it("extends the toolbox it builds on, its entries replacing those of the same name", () => {
    const layered = readToolboxInfo({ counter: { class: "other.Counter", description: "Another" } }, "/network/toolbox.hocon", toolbox).value;
    expect(layered.get("counter")).toMatchObject({ className: "other.Counter", description: "Another" });
    expect(layered.get("search")).toBe(toolbox.get("search"));
    expect(layered.get("get_current_date_time")).toBe(DEFAULT_TOOLBOX.get("get_current_date_time"));
  });

  it("warns about a bad entry, skips it, and keeps the others", () => {
    const { value, problems } = readToolboxInfo(
      {
        good: { class: "a.B" },
        classless: { args: {} },
        pathy: { class: "../../etc/passwd.X", description: "Escapes" },
        odd_args: { class: "a.B", args: [1] },
      },
      TOOLBOX_FILE,
    );
    expect([...value.keys()]).toEqual(["good"]);
    expect(problems).toEqual([
      { file: TOOLBOX_FILE, key: "classless", reason: "class must be a non-empty string", severity: "warning" },
      { file: TOOLBOX_FILE, key: "pathy", reason: "a coded tool's class must be module.ClassName, with dotted identifiers only", severity: "warning" },
      { file: TOOLBOX_FILE, key: "odd_args", reason: "args must be an object", severity: "warning" },
    ]);
  });
});

describe("agents that name a toolbox tool", () => {
  const network = build([
    { name: "Front", instructions: "Help.", tools: ["Search", "Count", "Brand", "Renamed"] },
    { name: "Search", toolbox: "search", args: { max_results: 2 } },
    { name: "Count", toolbox: "counter" },
    { name: "Brand", toolbox: "branded" },
    { name: "Renamed", toolbox: "counter", display_as: "tally", function: { description: "The spec's own" } },
  ]);
  const node = (name: string) => network.nodes.get(name)!;

  it("are tools of the kind their entry says, never LLM agents", () => {
    expect(["Search", "Count", "Brand"].map((name) => node(name).kind)).toEqual(["library_tool", "coded_tool", "coded_tool"]);
  });

  it("a library tool's args are the entry's with the agent's over them", () => {
    expect(node("Search").args).toEqual({ max_results: 2, topic: "news" });
  });

  it("a coded tool is described by its entry, unless the spec has a function block", () => {
    expect(node("Count").function).toEqual({ description: "Counts words", parameters: { type: "object", properties: { text: { type: "string" } } } });
    expect(node("Renamed").function).toEqual({ description: "The spec's own" });
  });

  it("display as langchain_tool or coded_tool, or as the entry or the spec says, the spec first", () => {
    expect(connectivityOf(network).map((entry) => [entry.origin, entry.displayAs])).toEqual([
      ["Front", "llm_agent"],
      ["Search", "langchain_tool"],
      ["Count", "coded_tool"],
      ["Brand", "counter"],
      ["Renamed", "tally"],
    ]);
  });

  it("a name the toolbox lacks is a warning: the network is served", () => {
    const served = build([{ name: "Front", instructions: "Help.", tools: ["Search", "Ghost"] }, { name: "Search", toolbox: "search" }, { name: "Ghost", toolbox: "ghost" }]);
    expect(served.nodes.get("Ghost")?.kind).toBe("library_tool");
    // A library class Axon does not implement runs in Python: whether it can be imported is the registry's to check.
    expect(served.warnings).toEqual([{ file: FILE, key: "tools[2].toolbox", reason: "ghost is not in the toolbox; calls of Ghost will fail", severity: "warning" }]);
  });

  it("the built-in toolbox names neuro-san's default tools with their kind, so Connectivity matches without an info file", () => {
    const names = ["google_serper", "website_search", "rag_retriever", "brave_search", "ddgs_search", "get_current_date_time", "tavily_search", "bing_search", "requests_get", "requests_post", "requests_toolkit"];
    const specs = names.map((name) => ({ name: `use_${name}`, toolbox: name }));
    const served = buildNetwork({
      name: "defaults",
      file: FILE,
      public: true,
      mcp: true,
      raw: { tools: [{ name: "Front", instructions: "Help.", tools: specs.map((spec) => spec.name) }, ...specs] },
      toolbox: DEFAULT_TOOLBOX,
    });
    expect(connectivityOf(served).slice(1).map((entry) => [entry.origin, entry.displayAs])).toEqual([
      ["use_google_serper", "coded_tool"],
      ["use_website_search", "coded_tool"],
      ["use_rag_retriever", "coded_tool"],
      ["use_brave_search", "coded_tool"],
      ["use_ddgs_search", "coded_tool"],
      ["use_get_current_date_time", "coded_tool"],
      ["use_tavily_search", "langchain_tool"],
      ["use_bing_search", "langchain_tool"],
      ["use_requests_get", "langchain_tool"],
      ["use_requests_post", "langchain_tool"],
      ["use_requests_toolkit", "langchain_tool"],
    ]);
    // Known to the toolbox: never "not in the toolbox".
    expect(served.warnings.map((warning) => warning.reason).filter((reason) => reason.includes("not in the toolbox"))).toEqual([]);
  });

  it("a toolbox tool cannot front a network, nor have tools of its own", () => {
    expect(problemsOf([{ name: "Front", toolbox: "search" }])).toEqual([
      { file: FILE, key: "tools[0].toolbox", reason: "the front man cannot be a toolbox tool: there is no valid front man" },
    ]);
    expect(problemsOf([{ name: "Front", instructions: "Help.", tools: ["Count"] }, { name: "Count", toolbox: "counter", tools: ["Front"] }])).toEqual([
      { file: FILE, key: "tools[1].tools", reason: "a toolbox tool cannot have tools" },
    ]);
  });
});

describe("the default toolbox's get_current_date_time", () => {
  it("tells the time in an IANA time zone, with its offset", () => {
    const told = new GetCurrentDateTime().invoke({ iana_timezone: "Asia/Kolkata" });
    expect(told).toMatchObject({ time_zone: "Asia/Kolkata", date_time: expect.stringMatching(/\+05:30$/) });
  });

  it("a UTC offset wins over a time zone; neither means UTC", () => {
    expect(new GetCurrentDateTime().invoke({ utc_offset: -5, iana_timezone: "Asia/Kolkata" })).toMatchObject({ time_zone: "UTC-05:00" });
    expect(new GetCurrentDateTime().invoke({})).toMatchObject({ time_zone: "UTC", date_time: expect.stringMatching(/\+00:00$/) });
  });

  it("refuses an unknown time zone and an offset out of range", () => {
    expect(() => new GetCurrentDateTime().invoke({ iana_timezone: "Mars/Olympus" })).toThrow("unknown IANA time zone Mars/Olympus");
    expect(() => new GetCurrentDateTime().invoke({ utc_offset: 30 })).toThrow("between -24 and 24");
  });
});
