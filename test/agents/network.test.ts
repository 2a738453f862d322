import { describe, expect, it } from "vitest";

import type { JsonObject } from "../../src/agents/hocon.js";
import type { AgentNetwork } from "../../src/agents/agent-network.js";
import { buildNetwork } from "../../src/agents/network.js";
import { RegistryProblemsError, type RegistryProblem } from "../../src/agents/problem.js";
import { middlewareProblems } from "../../src/agents/middleware/middleware-problems.js";

const FILE = "/networks/example.hocon";

function build(raw: JsonObject, isPublic = true): AgentNetwork {
  return buildNetwork({ name: "example", file: FILE, public: isPublic, mcp: isPublic, raw });
}

function problemsOf(raw: JsonObject): RegistryProblem[] {
  try {
    build(raw);
  } catch (error) {
    expect(error).toBeInstanceOf(RegistryProblemsError);
    return (error as RegistryProblemsError).problems;
  }
  throw new Error("expected the network to be invalid");
}

describe("a network's nodes", () => {
  const network = build({
    tools: [
      { name: "Front", tools: ["Thinker", "Adder", "/other_network", "https://agents.example.com:8443/remote"] },
      { name: "Thinker", instructions: "Think." },
      { name: "Adder", class: "adder.Adder", args: { tools: ["Thinker", "/third"] } },
    ],
  });

  it("makes the first spec the front man", () => {
    expect(network.frontMan.name).toBe("Front");
    expect(network.frontMan.kind).toBe("front_man");
  });

  it("tells LLM agents, coded tools and external agents apart", () => {
    expect([...network.nodes.values()].map((node) => [node.name, node.kind])).toEqual([
      ["Front", "front_man"],
      ["Thinker", "llm_agent"],
      ["Adder", "coded_tool"],
      ["/other_network", "external_agent"],
      ["https://agents.example.com:8443/remote", "external_agent"],
      ["/third", "external_agent"],
    ]);
  });

  it("says where an external agent's calls go", () => {
    expect(network.nodes.get("/other_network")?.external).toEqual({ kind: "same_server", network: "other_network" });
    expect(network.nodes.get("https://agents.example.com:8443/remote")?.external).toEqual({
      kind: "other_server",
      url: "https://agents.example.com:8443/remote",
      network: "remote",
    });
  });

  it("defaults display_as by kind and keeps an explicit one", () => {
    const displayed = build({
      tools: [
        { name: "Front", tools: ["Tool", "Shown", "/x"] },
        { name: "Tool", class: "tool.Tool" },
        { name: "Shown", display_as: "special" },
      ],
    });
    expect([...displayed.nodes.values()].map((node) => node.displayAs)).toEqual([
      "llm_agent",
      "coded_tool",
      "special",
      "external_agent",
    ]);
  });

  it("reads the agent spec keys", () => {
    const detailed = build({
      tools: [
        {
          name: "Front",
          function: {
            description: "Does things.",
            parameters: { type: "object" },
            sly_data_schema: { type: "object", properties: {} },
            sly_data_output_schema: { type: "object" },
          },
          instructions: "Be brief.",
          max_message_history: 4,
          structure_formats: "json",
          llm_config: { temperature: 0.1 },
          allow: {
            connectivity: false,
            to_upstream: { sly_data: ["total"] },
            to_downstream: { sly_data: true },
            from_downstream: { sly_data: { id: "their_id", secret: false } },
          },
          tools: ["Helper"],
        },
        { name: "Helper", command: "Answer in one line.", structure_formats: ["json"] },
      ],
    });
    expect(detailed.frontMan).toMatchObject({
      function: {
        description: "Does things.",
        parameters: { type: "object" },
        slyDataSchema: { type: "object", properties: {} },
        slyDataOutputSchema: { type: "object" },
      },
      instructions: "Be brief.",
      maxMessageHistory: 4,
      structureFormats: ["json"],
      llmConfig: { temperature: 0.1 },
      allow: {
        connectivity: false,
        toUpstream: ["total"],
        toDownstream: true,
        fromDownstream: { id: "their_id", secret: false },
      },
    });
    expect(detailed.nodes.get("Helper")).toMatchObject({ command: "Answer in one line.", structureFormats: ["json"] });
  });
});

describe("network-level keys", () => {
  it("default max_steps to 10,000, max_attempts to 3, max_execution_seconds to 120, description and tags to empty", () => {
    const network = build({ tools: [{ name: "Front" }] });
    expect(network.limits).toEqual({ maxSteps: 10_000, maxAttempts: 3, maxExecutionSeconds: 120 });
    expect(network.description).toBe("");
    expect(network.tags).toEqual([]);
    expect(network.llmConfig).toEqual({});
    expect(network.errorFragments).toEqual([]);
  });

  it("read limits, metadata, llm_config and error settings, passing other metadata through", () => {
    const network = build({
      llm_config: { model_name: "gpt-4o-mini" },
      max_iterations: 7,
      max_execution_seconds: 2.5,
      error_formatter: "json",
      error_fragments: ["Traceback"],
      verbose: true,
      llm_info_file: "llm_info.hocon",
      metadata: { description: "Helps.", tags: ["a", "b"], owner: "team" },
      tools: [{ name: "Front" }],
    });
    expect(network).toMatchObject({
      llmConfig: { model_name: "gpt-4o-mini" },
      limits: { maxSteps: 7, maxAttempts: 3, maxExecutionSeconds: 2.5 },
      errorFormatter: "json",
      errorFragments: ["Traceback"],
      verbose: true,
      llmInfoFile: "llm_info.hocon",
      description: "Helps.",
      tags: ["a", "b"],
      metadata: { description: "Helps.", tags: ["a", "b"], owner: "team" },
    });
  });

  it("is frozen: no request can change what the next one sees", () => {
    const network = build({ metadata: { tags: ["a"] }, tools: [{ name: "Front", function: { parameters: { type: "object" } } }] });
    expect(Object.isFrozen(network)).toBe(true);
    expect(Object.isFrozen(network.tags)).toBe(true);
    expect(Object.isFrozen(network.frontMan.function?.parameters)).toBe(true);
    expect(() => (network.tags as string[]).push("b")).toThrow();
  });
});

describe("commondefs", () => {
  const network = build({
    commondefs: {
      replacement_strings: { product: "Axon", year: 2025 },
      replacement_values: { shared_parameters: { type: "object", description: "About {product}." } },
    },
    metadata: { description: "All about {product} in {year}." },
    tools: [
      {
        name: "Front",
        instructions: 'Talk about {product}. Reply as JSON like {"answer": "..."}; leave {unknown} alone.',
        function: { description: "{product} helper", parameters: "shared_parameters" },
        tools: ["Helper"],
      },
      { name: "Helper", instructions: "shared_parameters is only replaced when it is the whole string" },
    ],
  });

  it("replace {key} in every string and leave other braces alone", () => {
    expect(network.description).toBe("All about Axon in 2025.");
    expect(network.frontMan.instructions).toBe('Talk about Axon. Reply as JSON like {"answer": "..."}; leave {unknown} alone.');
    expect(network.frontMan.function?.description).toBe("Axon helper");
  });

  it("replace a string equal to a replacement_values key with the value, itself string-replaced", () => {
    expect(network.frontMan.function?.parameters).toEqual({ type: "object", description: "About Axon." });
    expect(network.nodes.get("Helper")?.instructions).toBe("shared_parameters is only replaced when it is the whole string");
  });

  it("leave commondefs itself as written", () => {
    expect(network.raw.commondefs).toEqual({
      replacement_strings: { product: "Axon", year: 2025 },
      replacement_values: { shared_parameters: { type: "object", description: "About {product}." } },
    });
  });
});

describe("agent names as neuro-san accepts them", () => {
  it("takes names with spaces and punctuation, warning that LLMs see them with _", () => {
    const network = build({ tools: [{ name: "Airline 360 Assistant", tools: ["Fare Finder!"] }, { name: "Fare Finder!", instructions: "Find." }] });
    expect([...network.nodes.keys()]).toEqual(["Airline 360 Assistant", "Fare Finder!"]);
    expect(network.warnings).toEqual([
      { file: FILE, key: "tools[0].name", reason: "has characters LLM tool names do not allow; LLMs see them replaced by _", severity: "warning" },
      { file: FILE, key: "tools[1].name", reason: "has characters LLM tool names do not allow; LLMs see them replaced by _", severity: "warning" },
    ]);
  });

  it("refers to a network in a folder of the manifest as /folder/name", () => {
    const network = build({ tools: [{ name: "Front", tools: ["/industry/macys", "/SAP SD Assistant"] }] });
    expect(network.nodes.get("/industry/macys")?.external).toEqual({ kind: "same_server", network: "industry/macys" });
    expect(network.nodes.get("/SAP SD Assistant")?.external).toEqual({ kind: "same_server", network: "SAP SD Assistant" });
  });
});

describe("validation", () => {
  it("requires a non-empty tools list", () => {
    expect(problemsOf({})).toEqual([{ file: FILE, key: "tools", reason: "must be a non-empty list of agent specs" }]);
    expect(problemsOf({ tools: [] })).toEqual([{ file: FILE, key: "tools", reason: "must be a non-empty list of agent specs" }]);
  });

  it("names the file, key path and reason of every problem at once", () => {
    expect(
      problemsOf({
        max_iterations: "many",
        metadata: { tags: "not-a-list" },
        tools: [
          { name: "Front", tools: ["Helper", "Ghost"] },
          { name: "Helper" },
          { instructions: "I have no name." },
          { name: "/looks like a reference" },
          { name: "Helper" },
          "not an object",
        ],
      }),
    ).toEqual([
      { file: FILE, key: "tools[5]", reason: "must be an object" },
      { file: FILE, key: "tools[2].name", reason: "is required" },
      { file: FILE, key: "tools[3].name", reason: "must be a non-empty name, without control characters, not starting with /" },
      { file: FILE, key: "tools[4].name", reason: "duplicate agent name Helper" },
      { file: FILE, key: "tools[0].tools[1]", reason: "refers to undefined agent Ghost" },
      { file: FILE, key: "metadata.tags", reason: "must be a list of strings" },
      { file: FILE, key: "max_iterations", reason: "must be an integer" },
    ]);
  });

  it("refuses a front man that is a coded tool", () => {
    expect(problemsOf({ tools: [{ name: "Front", class: "front.Front" }] })).toEqual([
      { file: FILE, key: "tools[0].class", reason: "the front man cannot be a coded tool" },
    ]);
  });

  it("refuses, at load time, a coded tool class that could resolve outside the tool path", () => {
    for (const className of ["../outside.Evil", "a/b.Evil", "..Evil", "/etc/passwd.Evil", "pkg..mod.Evil"]) {
      expect(problemsOf({ tools: [{ name: "Front", tools: ["Tool"] }, { name: "Tool", class: className }] })).toEqual([
        { file: FILE, key: "tools[1].class", reason: "must be module.ClassName, with dotted identifiers only" },
      ]);
    }
  });

  it("refuses malformed references, classes and limits", () => {
    expect(
      problemsOf({
        max_execution_seconds: 0,
        error_formatter: "yaml",
        tools: [
          { name: "Front", tools: ["ftp://host/x", "/not//a/network", "/../up"], max_message_history: -1 },
          { name: "Tool", class: "NoModule", allow: { connectivity: "no", to_upstream: { sly_data: [1] } } },
        ],
      }),
    ).toEqual([
      { file: FILE, key: "tools[0].max_message_history", reason: "must be at least 0" },
      { file: FILE, key: "tools[1].class", reason: "must be module.ClassName, with dotted identifiers only" },
      { file: FILE, key: "tools[1].allow.connectivity", reason: "must be true or false" },
      {
        file: FILE,
        key: "tools[1].allow.to_upstream.sly_data",
        reason: "must be true, false, a list of keys or a map of key to true, false or a new name",
      },
      { file: FILE, key: "tools[0].tools[0]", reason: "refers to undefined agent ftp://host/x" },
      { file: FILE, key: "tools[0].tools[1]", reason: "refers to undefined agent /not//a/network" },
      { file: FILE, key: "tools[0].tools[2]", reason: "refers to undefined agent /../up" },
      { file: FILE, key: "max_execution_seconds", reason: "must be positive" },
      { file: FILE, key: "error_formatter", reason: "must be string or json" },
    ]);
  });
});

describe("neuro-san keys Axon does not implement", () => {
  it("are warnings naming the key, the network and what happens instead; the network is served", () => {
    const network = build({
      request_timeout_seconds: 10,
      house_style: "a HOCON definition, not a setting",
      tools: [
        {
          name: "Front",
          verbose: true,
          invocation: "event",
          max_execution_seconds: 5,
          intructions: "a typo",
          tools: ["/elsewhere"],
          allow: { from_downstream: { messages: true, sly_data: ["x"], extra: 1 }, sideways: true },
        },
      ],
    });
    const warnings = network.warnings.map(({ key, reason }) => [key, reason]);
    expect(warnings).toEqual([
      ["request_timeout_seconds", expect.stringContaining("network example: Axon does not implement request_timeout_seconds")],
      ["tools[0].verbose", expect.stringContaining("LOG_LEVEL")],
      ["tools[0].invocation", expect.stringContaining("function.invocation")],
      ["tools[0].max_execution_seconds", expect.stringContaining("the network's value applies")],
      ["tools[0].intructions", "network example: intructions is not a key Axon knows; ignored"],
      ["tools[0].allow.from_downstream.extra", expect.stringContaining("not a key Axon knows")],
      ["tools[0].allow.sideways", expect.stringContaining("not a key Axon knows")],
    ]);
    expect(network.warnings.every((warning) => warning.severity === "warning" && warning.file === FILE)).toBe(true);
  });


  it("an empty middleware list asks for nothing and is served", () => {
    expect(build({ tools: [{ name: "Front", middleware: [] }] }).warnings).toEqual([]);
  });
});

describe("max_steps, max_iterations and max_attempts", () => {
  it("max_iterations is max_steps' older name, which max_steps wins over, at the top level and per agent", () => {
    const network = build({
      max_iterations: 9,
      max_attempts: 1,
      tools: [{ name: "Front", max_steps: 4, max_iterations: 5, max_attempts: 2, tools: ["Helper"] }, { name: "Helper", max_iterations: 6 }],
    });
    expect(network.limits).toMatchObject({ maxSteps: 9, maxAttempts: 1 });
    expect(network.frontMan.limits).toEqual({ maxSteps: 4, maxAttempts: 2 });
    expect(network.nodes.get("Helper")?.limits).toEqual({ maxSteps: 6 });
    expect(network.warnings).toEqual([]);
  });

  it("must be positive integers", () => {
    expect(problemsOf({ max_steps: 0, tools: [{ name: "Front", max_attempts: "many" }] }).map(({ key, reason }) => [key, reason])).toEqual([
      ["tools[0].max_attempts", "must be an integer"],
      ["max_steps", "must be at least 1"],
    ]);
  });
});

describe("middleware", () => {
  it("is read in order, a class Axon implements checked against the arguments LangChain's takes", () => {
    const network = build({
      tools: [
        {
          name: "Front",
          middleware: [
            { class: "langchain.agents.middleware.PIIMiddleware", args: { pii_type: "email", strategy: "mask" } },
            { class: "studio.middleware.Checklist", args: { title: "Steps" } },
          ],
        },
      ],
    });
    expect(network.frontMan.middleware).toEqual([
      { className: "langchain.agents.middleware.PIIMiddleware", args: { pii_type: "email", strategy: "mask" }, allowReservations: false, keyPath: "tools[0].middleware[0]" },
      { className: "studio.middleware.Checklist", args: { title: "Steps" }, allowReservations: false, keyPath: "tools[0].middleware[1]" },
    ]);
  });

  it("an entry's allow.reservations lets its class have the reservationist special arg; any other allow key refuses the network", () => {
    const persistence = { class: "studio.middleware.Persistence", allow: { reservations: true }, args: { reservationist: true, sly_data: true } };
    expect(build({ tools: [{ name: "Front", middleware: [persistence] }] }).frontMan.middleware[0]).toMatchObject({ allowReservations: true });
    const problems = problemsOf({
      tools: [
        {
          name: "Front",
          middleware: [
            { class: "studio.middleware.A", allow: { reservations: "yes" } },
            { class: "studio.middleware.B", allow: { connectivity: false } },
            { class: "studio.middleware.C", allow: true },
            { class: "studio.middleware.D", allows: { reservations: true } },
          ],
        },
      ],
    });
    expect(problems.map(({ key, reason }) => [key, reason])).toEqual([
      ["tools[0].middleware[0].allow.reservations", "must be true or false"],
      ["tools[0].middleware[1].allow.connectivity", "is not a middleware allow key: only reservations is"],
      ["tools[0].middleware[2].allow", "must be an object"],
      ["tools[0].middleware[3].allows", "is not a middleware key: only class, args and allow are"],
    ]);
  });

  it("refuses the network for an argument the class does not take, a wrong value, a missing one, naming each", async () => {
    const network = build({
      tools: [
        {
          name: "Front",
          tools: ["Tool"],
          middleware: [
            { class: "langchain.agents.middleware.PIIMiddleware", args: { pii_type: "phone", strategy: "shred", aply_to_input: true } },
            { class: "langchain.agents.middleware.pii.PIIMiddleware", args: { pii_type: "code", detector: "(unclosed" } },
            { class: "langchain.agents.middleware.PIIMiddleware" },
          ],
        },
        { name: "Tool", class: "tools.Tool", middleware: [] },
      ],
    });
    expect((await middlewareProblems(network, undefined)).map(({ key, reason }) => [key, reason])).toEqual([
      ["tools[0].middleware[0].args.strategy", "must be one of block, redact, mask, hash"],
      [
        "tools[0].middleware[0].args.aply_to_input",
        "is not an argument of PIIMiddleware; it takes pii_type, strategy, detector, apply_to_input, apply_to_output, apply_to_tool_results, stream_lookback",
      ],
      ["tools[0].middleware[1].args.detector", expect.stringMatching(/^is not a regular expression Axon can run: /)],
      ["tools[0].middleware[2].args.pii_type", "is required by PIIMiddleware"],
    ]);
    expect(problemsOf({ tools: [{ name: "Front", middleware: [{ class: "NoModule", args: {} }] }] }).map(({ key, reason }) => [key, reason])).toEqual([
      ["tools[0].middleware[0].class", "must be a fully qualified class name, package.module.ClassName"],
    ]);
  });

  it("checks HumanInTheLoopMiddleware's interrupt_on: its decisions, its settings", async () => {
    const network = build({
      tools: [
        {
          name: "Front",
          middleware: [
            {
              class: "langchain.agents.middleware.HumanInTheLoopMiddleware",
              args: { interrupt_on: { a: true, b: false, c: { allowed_decisions: ["approve", "respond"] }, d: { when: "always" } } },
            },
            { class: "langchain.agents.middleware.HumanInTheLoopMiddleware", args: {} },
          ],
        },
      ],
    });
    expect((await middlewareProblems(network, undefined)).map(({ key, reason }) => [key, reason])).toEqual([
      ["tools[0].middleware[0].args.interrupt_on.c.allowed_decisions", "must be a list of approve, edit, reject"],
      ["tools[0].middleware[0].args.interrupt_on.d.when", "is not a setting of an interrupt: allowed_decisions, description, args_schema are"],
      ["tools[0].middleware[1].args.interrupt_on", "is required by HumanInTheLoopMiddleware"],
    ]);
  });

  it("applies to LLM agents only: a coded tool with middleware refuses the network", () => {
    const problems = problemsOf({
      tools: [
        { name: "Front", tools: ["Tool"] },
        { name: "Tool", class: "tools.Tool", middleware: [{ class: "langchain.agents.middleware.PIIMiddleware", args: { pii_type: "email" } }] },
      ],
    });
    expect(problems.map(({ key }) => key)).toEqual(["tools[1].middleware"]);
  });

  it("an empty middleware list asks for nothing", () => {
    expect(build({ tools: [{ name: "Front", middleware: [] }] }).frontMan.middleware).toEqual([]);
  });
});

describe("allow.from_downstream.messages", () => {
  const messagesFrom = (messages: unknown) =>
    build({ tools: [{ name: "Front", tools: ["/a", "/b"], allow: { from_downstream: { messages } } }] as unknown as JsonObject[] }).frontMan.allow?.messagesFrom;

  it("takes neuro-san's forms: a boolean, one reference, a list, or a map of references to booleans", () => {
    expect(messagesFrom(true)).toBe(true);
    expect(messagesFrom(false)).toBeUndefined();
    expect(messagesFrom("/a")).toEqual(["/a"]);
    expect(messagesFrom(["/a", "/b"])).toEqual(["/a", "/b"]);
    expect(messagesFrom({ "/a": true, "/b": false })).toEqual(["/a"]);
  });

  it("anything else is a problem", () => {
    expect(problemsOf({ tools: [{ name: "Front", allow: { from_downstream: { messages: 3 } } }] }).map((problem) => problem.key)).toEqual([
      "tools[0].allow.from_downstream.messages",
    ]);
  });
});
