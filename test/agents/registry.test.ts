import { afterEach, describe, expect, it, vi } from "vitest";

import path from "node:path";
import { AgentRegistry, checkoutRootOf } from "../../src/agents/registry.js";
import { RegistryProblemsError } from "../../src/agents/problem.js";
import { AxonError, Code } from "../../src/errors.js";
import type { Logger } from "../../src/logger.js";
import { NetworkFolder, smallNetwork } from "./fixture.js";

let folder: NetworkFolder | undefined;
let registry: AgentRegistry | undefined;
afterEach(async () => {
  registry?.close();
  registry = undefined;
  await folder?.remove();
  folder = undefined;
});

async function loadRegistry(files: Record<string, string>, logger?: Logger): Promise<AgentRegistry> {
  folder = await NetworkFolder.create(files);
  registry = await AgentRegistry.load({
    manifestFile: folder.path("registries/manifest.hocon"),
    projectRoot: folder.root,
    ...(logger ? { logger } : {}),
  });
  return registry;
}

function recordingLogger() {
  const warnings: Record<string, unknown>[] = [];
  const logger = {
    warn: (fields: Record<string, unknown>) => warnings.push(fields),
    info: () => undefined,
    error: () => undefined,
  } as unknown as Logger;
  return { logger, warnings };
}

describe("serving networks", () => {
  it("lists public networks in manifest order and keeps private ones callable but unlisted", async () => {
    const agents = await loadRegistry({
      "registries/manifest.hocon": `{
        "zulu.hocon": true
        "alpha.hocon": true
        "secret.hocon": {serve: true, public: false}
        "unserved.hocon": false
      }`,
      "registries/zulu.hocon": smallNetwork("Zulu"),
      "registries/alpha.hocon": smallNetwork("Alpha"),
      "registries/secret.hocon": smallNetwork("Secret"),
      "registries/unserved.hocon": smallNetwork("Unserved"),
    });
    expect(agents.listPublic()).toEqual([
      { agentName: "zulu", description: "Zulu", tags: ["test"] },
      { agentName: "alpha", description: "Alpha", tags: ["test"] },
    ]);
    expect(agents.get("secret")?.public).toBe(false);
    expect(agents.require("secret").description).toBe("Secret");
    expect(agents.get("unserved")).toBeUndefined();
    expect(agents.networks().map((network) => network.name)).toEqual(["zulu", "alpha", "secret"]);
  });

  it("answers connectivity and function by network name", async () => {
    const agents = await loadRegistry({
      "registries/manifest.hocon": `"net.hocon": true`,
      "registries/net.hocon": smallNetwork("Net"),
    });
    expect(agents.connectivity("net")).toEqual([
      { origin: "Front", tools: ["Helper"], displayAs: "llm_agent" },
      { origin: "Helper", tools: [], displayAs: "llm_agent" },
    ]);
    expect(agents.function("net")).toEqual({ description: "Net" });
    // Callers get their own copy.
    agents.connectivity("net")[0]!.tools.push("Mutated");
    expect(agents.connectivity("net")[0]!.tools).toEqual(["Helper"]);
  });

  it("answers an unknown network with NOT_FOUND AGENT_NOT_FOUND naming it in metadata", async () => {
    const agents = await loadRegistry({ "registries/manifest.hocon": `{}` });
    expect(agents.get("nope")).toBeUndefined();
    for (const call of [() => agents.require("nope"), () => agents.connectivity("nope"), () => agents.function("nope")]) {
      let thrown: unknown;
      try {
        call();
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(AxonError);
      expect(thrown).toMatchObject({
        code: Code.NotFound,
        reason: "AGENT_NOT_FOUND",
        message: "agent network not found",
        metadata: { agent_name: "nope" },
      });
      expect((thrown as AxonError).message).not.toMatch(/[/:,?#&=+$@;]/);
    }
  });

  it("reports a network file that is not valid HOCON, logs it, and still serves the others", async () => {
    const { logger, warnings } = recordingLogger();
    const agents = await loadRegistry(
      {
        "registries/manifest.hocon": `"good.hocon": true\n"broken.hocon": true\n"invalid.hocon": true\n"missing.hocon": true`,
        "registries/good.hocon": smallNetwork("Good"),
        "registries/broken.hocon": `tools: [\n  { name: "Front" \n`,
        "registries/invalid.hocon": `tools: [{ name: "Front", tools: ["Ghost"] }]`,
      },
      logger,
    );
    expect(agents.listPublic().map((listing) => listing.agentName)).toEqual(["good"]);
    const broken = folder!.path("registries/broken.hocon");
    const invalid = folder!.path("registries/invalid.hocon");
    const missing = folder!.path("registries/missing.hocon");
    expect(agents.problems).toEqual([
      { file: broken, line: expect.any(Number), reason: expect.any(String) },
      { file: invalid, key: "tools[0].tools[0]", reason: "refers to undefined agent Ghost" },
      { file: missing, reason: "file not found" },
    ]);
    expect(warnings.map((warning) => warning.file)).toEqual([broken, invalid, missing]);
    expect(warnings[1]).toMatchObject({ key: "tools[0].tools[0]", reason: "refers to undefined agent Ghost" });
  });

  it("refuses to start from a manifest that cannot be read", async () => {
    folder = await NetworkFolder.create({ "registries/manifest.hocon": `{ "a.hocon": ` });
    await expect(
      AgentRegistry.load({ manifestFile: folder.path("registries/manifest.hocon"), projectRoot: folder.root }),
    ).rejects.toBeInstanceOf(RegistryProblemsError);
    await expect(
      AgentRegistry.load({ manifestFile: folder.path("registries/absent.hocon"), projectRoot: folder.root }),
    ).rejects.toThrow(/file not found/);
  });

  it("loads many networks quickly, parsing each once", async () => {
    const files: Record<string, string> = {};
    const lines: string[] = [];
    for (let index = 0; index < 100; index += 1) {
      files[`registries/net_${index}.hocon`] = smallNetwork(`Network ${index}`);
      lines.push(`"net_${index}.hocon": true`);
    }
    files["registries/manifest.hocon"] = lines.join("\n");
    const started = performance.now();
    const agents = await loadRegistry(files);
    expect(agents.listPublic()).toHaveLength(100);
    // Generous: a few hundred milliseconds here; this only catches accidental quadratic work.
    expect(performance.now() - started).toBeLessThan(10_000);
  });
});

describe("a neuro-san-studio checkout", () => {
  // Its manifest and networks include "registries/..." paths, meant relative to the checkout's root.
  const studio = {
    "studio/registries/manifest.hocon": `include "registries/basic/manifest.hocon"`,
    "studio/registries/basic/manifest.hocon": `"basic/music_nerd.hocon": true`,
    "studio/registries/basic/music_nerd.hocon": `include "registries/llm_config.hocon"\n${smallNetwork("Music")}\nllm_config: \${llm}`,
    "studio/registries/llm_config.hocon": `llm { model_name: \${?STUDIO_MODEL} }`,
  };

  it("serves its networks with AGENT_MANIFEST_FILE pointing into it, whatever the working directory", async () => {
    folder = await NetworkFolder.create(studio);
    registry = await AgentRegistry.load({
      manifestFile: folder.path("studio/registries/manifest.hocon"),
      projectRoot: folder.path("elsewhere"),
      environment: { STUDIO_MODEL: "gpt-4.1" },
    });
    expect(registry.problems).toEqual([]);
    expect(registry.require("basic/music_nerd").llmConfig).toEqual({ model_name: "gpt-4.1" });
  });

  it("a missing include is a problem naming every path tried, beside the cause it leads to", async () => {
    folder = await NetworkFolder.create({
      "studio/registries/manifest.hocon": `"net.hocon": true`,
      "studio/registries/net.hocon": `include "registries/defs.hocon"\n${smallNetwork("Net")}\nllm_config: \${llm}`,
    });
    const { logger, warnings } = recordingLogger();
    registry = await AgentRegistry.load({ manifestFile: folder.path("studio/registries/manifest.hocon"), projectRoot: folder.path("cwd"), logger });
    const net = folder.path("studio/registries/net.hocon");
    expect(registry.get("net")).toBeUndefined();
    expect(registry.problems).toEqual([
      {
        file: net,
        reason: `include "registries/defs.hocon" was not found; looked for ${[
          folder.path("studio/registries/registries/defs.hocon"),
          folder.path("studio/registries/defs.hocon"),
          folder.path("cwd/registries/defs.hocon"),
        ].join(", ")}`,
        severity: "warning",
      },
      { file: net, line: expect.any(Number), reason: "Unable to resolve 'llm'." },
    ]);
    expect(warnings.map((warning) => warning.file)).toEqual([net, net]);
  });

  it("the checkout root is the folder holding the manifest's registries folder, else the manifest's own", () => {
    expect(checkoutRootOf(path.join("/work", "studio", "registries", "manifest.hocon"))).toBe(path.join("/work", "studio"));
    expect(checkoutRootOf(path.join("/work", "studio", "registries", "basic", "manifest.hocon"))).toBe(path.join("/work", "studio"));
    expect(checkoutRootOf(path.join("/srv", "agents", "manifest.hocon"))).toBe(path.join("/srv", "agents"));
  });
});

describe("toolbox and MCP info files", () => {
  const network = `${smallNetwork("Shelf")}
    tools: [
      { name: "Front", instructions: "Help.", tools: ["Count", "Count2"] }
      { name: "Count", toolbox: "counter" }
      { name: "Count2", toolbox: "counter2" }
    ]
    toolbox_info_file: "toolbox/shelf.hocon"`;

  it("a rescan picks up a changed AGENT_TOOLBOX_INFO_FILE, a network's toolbox_info_file and AGENT_MCP_INFO_FILE", async () => {
    folder = await NetworkFolder.create({
      "registries/manifest.hocon": `"shelf.hocon": true`,
      "registries/shelf.hocon": network,
      "registries/toolbox/shelf.hocon": `counter2 { class: "c.Count", description: "Counts, per network" }`,
      "config/toolbox.hocon": `counter { class: "c.Count", description: "Counts" }`,
      "config/mcp.hocon": `"https://mcp.example.com/mcp" { http_headers { Authorization: "Bearer one" } }`,
    });
    registry = await AgentRegistry.load({
      manifestFile: folder.path("registries/manifest.hocon"),
      projectRoot: folder.root,
      toolboxInfoFile: folder.path("config/toolbox.hocon"),
      mcpInfoFile: folder.path("config/mcp.hocon"),
    });
    expect(registry.problems).toEqual([]);
    expect(registry.require("shelf").nodes.get("Count")?.function?.description).toBe("Counts");
    expect(registry.mcpServer("https://mcp.example.com/mcp")?.headers).toEqual({ Authorization: "Bearer one" });
    expect(await registry.reloadIfChanged()).toBe(false);

    await folder.write({ "config/toolbox.hocon": `counter { class: "c.Count", description: "Counts, revised" }` });
    expect(await registry.reloadIfChanged()).toBe(true);
    expect(registry.require("shelf").nodes.get("Count")?.function?.description).toBe("Counts, revised");

    await folder.write({ "registries/toolbox/shelf.hocon": `counter2 { class: "c.Count", description: "Counts, per network, revised" }` });
    expect(await registry.reloadIfChanged()).toBe(true);
    expect(registry.require("shelf").nodes.get("Count2")?.function?.description).toBe("Counts, per network, revised");

    await folder.write({ "config/mcp.hocon": `"https://mcp.example.com/mcp" { http_headers { Authorization: "Bearer two" } }` });
    expect(await registry.reloadIfChanged()).toBe(true);
    expect(registry.mcpServer("https://mcp.example.com/mcp")?.headers).toEqual({ Authorization: "Bearer two" });
  });

  it("a broken toolbox file is reported and the networks load on the default toolbox; a missing one names the paths tried", async () => {
    folder = await NetworkFolder.create({
      "registries/manifest.hocon": `"shelf.hocon": true`,
      "registries/shelf.hocon": network,
      "config/toolbox.hocon": `counter { class: `,
    });
    registry = await AgentRegistry.load({
      manifestFile: folder.path("registries/manifest.hocon"),
      projectRoot: folder.root,
      toolboxInfoFile: folder.path("config/toolbox.hocon"),
    });
    const shelf = folder.path("registries/shelf.hocon");
    expect(registry.problems).toEqual([
      { file: folder.path("config/toolbox.hocon"), line: expect.any(Number), reason: expect.any(String) },
      {
        file: shelf,
        key: "toolbox_info_file",
        reason: `toolbox/shelf.hocon was not found; looked for ${folder.path("registries/toolbox/shelf.hocon")}, ${folder.path("toolbox/shelf.hocon")}`,
        severity: "warning",
      },
      { file: shelf, key: "tools[1].toolbox", reason: "counter is not in the toolbox; calls of Count will fail", severity: "warning" },
      { file: shelf, key: "tools[2].toolbox", reason: "counter2 is not in the toolbox; calls of Count2 will fail", severity: "warning" },
    ]);
    expect(registry.get("shelf")).toBeDefined();
  });
});

describe("networks offered as MCP tools", () => {
  it("are the public ones, minus those the manifest marks mcp: false", async () => {
    const agents = await loadRegistry({
      "registries/manifest.hocon": `"open.hocon": true\n"quiet.hocon": {mcp: false}\n"hidden.hocon": {public: false}\n"tool.hocon": {public: false, mcp: true}`,
      "registries/open.hocon": smallNetwork("Open"),
      "registries/quiet.hocon": smallNetwork("Quiet"),
      "registries/hidden.hocon": smallNetwork("Hidden"),
      "registries/tool.hocon": smallNetwork("Tool"),
    });
    expect(agents.listPublic().map((listing) => listing.agentName)).toEqual(["open", "quiet", "tool"]);
    expect(agents.listMcp().map((listing) => listing.agentName)).toEqual(["open", "tool"]);
  });
});

describe("several manifests in AGENT_MANIFEST_FILE", () => {
  it("are read in order, each network file relative to its own manifest, a later entry replacing an earlier one", async () => {
    folder = await NetworkFolder.create({
      "base/manifest.hocon": `"one.hocon": true
"two.hocon": true
"three.hocon": true`,
      "base/one.hocon": smallNetwork("Base one"),
      "base/two.hocon": smallNetwork("Base two"),
      "base/three.hocon": smallNetwork("Base three"),
      "site/manifest.hocon": `"two.hocon": {public: false}
"three.hocon": false
"four.hocon": true`,
      "site/two.hocon": smallNetwork("Site two"),
      "site/four.hocon": smallNetwork("Site four"),
    });
    const manifests = [folder.path("base/manifest.hocon"), folder.path("missing/manifest.hocon"), folder.path("site/manifest.hocon")];
    registry = await AgentRegistry.load({ manifestFile: manifests.join(":"), projectRoot: folder.root });
    expect(registry.networks().map((network) => [network.name, network.description, network.public])).toEqual([
      ["one", "Base one", true],
      ["two", "Site two", false],
      ["four", "Site four", true],
    ]);
    expect(registry.problems).toEqual([{ file: manifests[1], reason: expect.stringContaining("manifest not found"), severity: "warning" }]);
  });
});

describe("MCP tool names", () => {
  it("are neuro-san's safe names or mcp_name; a network whose name another holds is left out, with a problem", async () => {
    const agents = await loadRegistry({
      "registries/manifest.hocon": `"deep/math.hocon": true
"deep__math.hocon": true
"named.hocon": {mcp_name: "greeter"}
"open.hocon": true`,
      "registries/deep/math.hocon": smallNetwork("Math"),
      "registries/deep__math.hocon": smallNetwork("Flat"),
      "registries/named.hocon": smallNetwork("Named"),
      "registries/open.hocon": smallNetwork("Open"),
    });
    expect(agents.listMcp().map(({ agentName, toolName }) => [agentName, toolName])).toEqual([
      ["deep__math", "deep__math"],
      ["named", "greeter"],
      ["open", "open"],
    ]);
    expect(agents.problems).toEqual([
      { file: folder!.path("registries/manifest.hocon"), key: "deep/math", reason: expect.stringContaining("belongs to network deep__math") },
    ]);
    expect(agents.get("deep/math")).toBeDefined();
  });
});

describe("reloading", () => {
  it("picks up changed, added and removed networks on reload", async () => {
    const agents = await loadRegistry({
      "registries/manifest.hocon": `"one.hocon": true\n"two.hocon": true`,
      "registries/one.hocon": smallNetwork("One"),
      "registries/two.hocon": smallNetwork("Two"),
    });
    const before = agents.require("one");
    await folder!.write({
      "registries/manifest.hocon": `"one.hocon": true\n"three.hocon": {public: false}`,
      "registries/one.hocon": smallNetwork("One, revised"),
      "registries/three.hocon": smallNetwork("Three"),
    });
    expect(await agents.reload()).toEqual([]);
    expect(agents.require("one").description).toBe("One, revised");
    expect(agents.get("two")).toBeUndefined();
    expect(agents.get("three")?.public).toBe(false);
    // Whoever held the old network keeps a consistent, unchanged copy.
    expect(before.description).toBe("One");
  });

  it("keeps serving the previous set when the manifest breaks, and recovers when it is fixed", async () => {
    const agents = await loadRegistry({
      "registries/manifest.hocon": `"one.hocon": true`,
      "registries/one.hocon": smallNetwork("One"),
    });
    await folder!.write({ "registries/manifest.hocon": `"one.hocon": [` });
    const problems = await agents.reload();
    expect(problems).toEqual([{ file: folder!.path("registries/manifest.hocon"), line: expect.any(Number), reason: expect.any(String) }]);
    expect(agents.problems).toEqual(problems);
    expect(agents.require("one").description).toBe("One");
    // Retried on the next edit, not on every check.
    expect(await agents.reloadIfChanged()).toBe(false);

    await folder!.write({ "registries/manifest.hocon": `"one.hocon": true\n"two.hocon": true`, "registries/two.hocon": smallNetwork("Two") });
    expect(await agents.reloadIfChanged()).toBe(true);
    expect(agents.problems).toEqual([]);
    expect(agents.get("two")?.description).toBe("Two");
  });

  it("keeps the last good version of a network whose file breaks, while updating the others", async () => {
    const agents = await loadRegistry({
      "registries/manifest.hocon": `"steady.hocon": true\n"fragile.hocon": true`,
      "registries/steady.hocon": smallNetwork("Steady"),
      "registries/fragile.hocon": smallNetwork("Fragile"),
    });
    await folder!.write({
      "registries/steady.hocon": smallNetwork("Steady, revised"),
      "registries/fragile.hocon": `tools: [{ name: "Front", tools: ["Ghost"] }]`,
    });
    const problems = await agents.reload();
    const fragile = folder!.path("registries/fragile.hocon");
    expect(problems).toEqual([
      { file: fragile, key: "tools[0].tools[0]", reason: "refers to undefined agent Ghost" },
      { file: fragile, reason: "still serving the version of fragile loaded before" },
    ]);
    expect(agents.require("fragile").description).toBe("Fragile");
    expect(agents.require("steady").description).toBe("Steady, revised");
  });

  it("reloads only when a served file or one it includes changed", async () => {
    const agents = await loadRegistry({
      "registries/manifest.hocon": `"styled.hocon": true`,
      "registries/styled.hocon": `include "style.hocon"\n${smallNetwork("Styled")}\nmetadata.tags: [\${style}]`,
      "registries/style.hocon": `style: "calm"`,
    });
    expect(agents.require("styled").tags).toEqual(["calm"]);
    expect(await agents.reloadIfChanged()).toBe(false);

    await folder!.write({ "registries/style.hocon": `style: "excited"` });
    expect(await agents.reloadIfChanged()).toBe(true);
    expect(agents.require("styled").tags).toEqual(["excited"]);
    expect(await agents.reloadIfChanged()).toBe(false);
  });

  it("watches on a timer when a period is set and stops on close", async () => {
    const agents = await loadRegistry({
      "registries/manifest.hocon": `"live.hocon": true`,
      "registries/live.hocon": smallNetwork("Live"),
    });
    agents.watch(0.02);
    await folder!.write({ "registries/live.hocon": smallNetwork("Live, edited") });
    await vi.waitFor(() => expect(agents.require("live").description).toBe("Live, edited"), { timeout: 5_000, interval: 10 });

    agents.close();
    const reload = vi.spyOn(agents, "reload");
    await folder!.write({ "registries/live.hocon": smallNetwork("Live, after close") });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(reload).not.toHaveBeenCalled();
    expect(agents.require("live").description).toBe("Live, edited");
  });

  it("runs overlapping reloads one after another, the last one winning", async () => {
    const agents = await loadRegistry({
      "registries/manifest.hocon": `"net.hocon": true`,
      "registries/net.hocon": smallNetwork("First"),
    });
    await folder!.write({ "registries/net.hocon": smallNetwork("Second") });
    const first = agents.reload();
    await folder!.write({ "registries/net.hocon": smallNetwork("Third") });
    const second = agents.reload();
    await Promise.all([first, second]);
    expect(agents.require("net").description).toBe("Third");
  });
});
