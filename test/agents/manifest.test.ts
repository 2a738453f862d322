import { afterEach, describe, expect, it } from "vitest";

import { manifestFilesOf, readManifest } from "../../src/agents/manifest.js";
import { RegistryProblemsError } from "../../src/agents/problem.js";
import { NetworkFolder } from "./fixture.js";

let folder: NetworkFolder | undefined;
afterEach(async () => {
  await folder?.remove();
  folder = undefined;
});

async function manifestOf(text: string) {
  folder = await NetworkFolder.create({ "registries/manifest.hocon": text });
  return readManifest(folder.path("registries/manifest.hocon"));
}

describe("AGENT_MANIFEST_FILE", () => {
  it("names several manifests separated by spaces (neuro-san) or colons (neuro-san-studio's image), each against the root", () => {
    expect(manifestFilesOf("a/manifest.hocon  /etc/b.hocon:c.hocon\n", "/srv")).toEqual(["/srv/a/manifest.hocon", "/etc/b.hocon", "/srv/c.hocon"]);
  });
});

describe("the manifest", () => {
  it("reads true as served and public, false as not served, and {serve, public} as written", async () => {
    const manifest = await manifestOf(`{
      "open.hocon": true
      "off.hocon": false
      "hidden.hocon": {serve: true, public: false}
      "parked.hocon": {serve: false, public: true}
    }`);
    expect(manifest.entries.map(({ name, serve, public: isPublic }) => ({ name, serve, public: isPublic }))).toEqual([
      { name: "open", serve: true, public: true },
      { name: "off", serve: false, public: false },
      { name: "hidden", serve: true, public: false },
      { name: "parked", serve: false, public: true },
    ]);
    expect(manifest.problems).toEqual([]);
  });

  it("treats a missing serve or public as true", async () => {
    const manifest = await manifestOf(`"a.hocon": {public: false}\n"b.hocon": {serve: true}`);
    expect(manifest.entries.map(({ serve, public: isPublic }) => [serve, isPublic])).toEqual([
      [true, false],
      [true, true],
    ]);
  });

  it("resolves files relative to the manifest and names networks by that path, as neuro-san does", async () => {
    const manifest = await manifestOf(`"industry/macys.hocon": true\n"SAP SD Assistant.hocon": true`);
    expect(manifest.entries).toEqual([
      {
        manifest: folder!.path("registries/manifest.hocon"),
        name: "industry/macys",
        entry: "industry/macys.hocon",
        file: folder!.path("registries/industry/macys.hocon"),
        serve: true,
        public: true,
        mcp: true,
        periodic: [],
      },
      {
        manifest: folder!.path("registries/manifest.hocon"),
        name: "SAP SD Assistant",
        entry: "SAP SD Assistant.hocon",
        file: folder!.path("registries/SAP SD Assistant.hocon"),
        serve: true,
        public: true,
        mcp: true,
        periodic: [],
      },
    ]);
  });

  it("reads mcp_name (or mcp.name) as the MCP tool name, and naming the tool offers it unless mcp is false", async () => {
    const manifest = await manifestOf(`{
      "named.hocon": {public: false, mcp_name: "greeter"}
      "object.hocon": {mcp: {name: "other"}}
      "refused.hocon": {mcp: false, mcp_name: "nobody"}
      "empty.hocon": {mcp_name: ""}
    }`);
    expect(manifest.entries.map(({ name, public: isPublic, mcp, mcpName }) => [name, isPublic, mcp, mcpName])).toEqual([
      ["named", true, true, "greeter"],
      ["object", true, true, "other"],
      ["refused", true, false, "nobody"],
    ]);
    expect(manifest.problems.map((problem) => [problem.key, problem.reason])).toEqual([["empty.hocon", "mcp_name must be a non-empty string"]]);
  });

  it("reads the mcp key: false keeps a public network off Axon's MCP tools, true makes it public", async () => {
    const manifest = await manifestOf(`{
      "listed.hocon": {serve: true}
      "not_a_tool.hocon": {mcp: false}
      "tool_but_private.hocon": {public: false, mcp: true}
      "tool_object.hocon": {public: false, mcp: {enable: true}}
      "private.hocon": {public: false}
    }`);
    expect(manifest.entries.map(({ name, public: isPublic, mcp }) => [name, isPublic, mcp])).toEqual([
      ["listed", true, true],
      ["not_a_tool", true, false],
      ["tool_but_private", true, true],
      ["tool_object", true, true],
      ["private", false, false],
    ]);
    expect(manifest.problems).toEqual([]);
  });

  it("warns about keys it does not know and still serves the network", async () => {
    const manifest = await manifestOf(`"ticker.hocon": {serve: true, colour: "blue"}`);
    expect(manifest.entries.map((entry) => entry.name)).toEqual(["ticker"]);
    const file = folder!.path("registries/manifest.hocon");
    expect(manifest.problems).toEqual([{ file, key: "ticker.hocon", reason: "colour is not a manifest key; ignored", severity: "warning" }]);
  });

  it("reads periodic into the runs it schedules, warning about what it cannot run", async () => {
    const manifest = await manifestOf(`"ticker.hocon": {periodic: "*/5 * * * *"}, "nightly.hocon": {periodic: {interactions: [{cron_schedule: "0 0 * * *"}, {cron_schedule: "nope"}]}}`);
    expect(manifest.entries.map((entry) => [entry.name, entry.periodic.map((interaction) => interaction.cronSchedule)])).toEqual([
      ["ticker", ["*/5 * * * *"]],
      ["nightly", ["0 0 * * *"]],
    ]);
    expect(manifest.problems).toEqual([
      {
        file: folder!.path("registries/manifest.hocon"),
        key: "nightly.hocon",
        reason: 'periodic.interactions[1]: cron_schedule "nope": a cron schedule has 5 or 6 fields, this one 1; it is not scheduled',
        severity: "warning",
      },
    ]);
  });

  it("reads the entries of included sub-manifests, relative to the including manifest, as neuro-san-studio writes them", async () => {
    folder = await NetworkFolder.create({
      "registries/manifest.hocon": `include "registries/basic/manifest.hocon"\n"top.hocon": true`,
      "registries/basic/manifest.hocon": `"basic/hello.hocon": true`,
    });
    const manifest = await readManifest(folder.path("registries/manifest.hocon"), { includeRoots: [folder.root] });
    expect(manifest.entries.map((entry) => [entry.name, entry.file])).toEqual([
      ["basic/hello", folder.path("registries/basic/hello.hocon")],
      ["top", folder.path("registries/top.hocon")],
    ]);
  });

  it("joins an unquoted file name that HOCON read as a path", async () => {
    const manifest = await manifestOf(`hello_world.hocon = true\nother.hocon {serve: true, public: false}`);
    expect(manifest.entries.map((entry) => [entry.entry, entry.public])).toEqual([
      ["hello_world.hocon", true],
      ["other.hocon", false],
    ]);
  });

  it("reports a bad entry and keeps the others, in order", async () => {
    const manifest = await manifestOf(`{
      "first.hocon": true
      "bad.hocon": "yes"
      "worse.hocon": {serve: "maybe"}
      "odd.hocon": {mcp: "sometimes"}
      "../outside.hocon": true
      "first.json": true
      "last.hocon": true
    }`);
    expect(manifest.entries.map((entry) => entry.name)).toEqual(["first", "last"]);
    const file = folder!.path("registries/manifest.hocon");
    expect(manifest.problems).toEqual([
      { file, key: "bad.hocon", reason: "must be true, false or {serve, public, mcp}" },
      { file, key: "worse.hocon", reason: "serve and public must be true or false" },
      { file, key: "odd.hocon", reason: "mcp must be true, false or {enable}" },
      { file, key: "../outside.hocon", reason: 'network name "../outside" must be a relative path without empty, . or .. parts' },
      { file, key: "first.json", reason: "network name first is already taken by first.hocon" },
    ]);
  });

  it("fails as a whole, naming file, line and reason, when it is not valid HOCON", async () => {
    const error = await manifestOf(`{\n"a.hocon": true\n"b.hocon": [\n}`).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(RegistryProblemsError);
    expect((error as RegistryProblemsError).problems).toEqual([
      { file: folder!.path("registries/manifest.hocon"), line: 4, reason: "Unexpected token." },
    ]);
  });
});
