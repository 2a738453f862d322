import { afterEach, describe, expect, it } from "vitest";

import { readManifest } from "../../src/agents/manifest.js";
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

  it("resolves files relative to the manifest and names networks by file stem", async () => {
    const manifest = await manifestOf(`"teams/sales_bot.hocon": true`);
    expect(manifest.entries).toEqual([
      {
        name: "sales_bot",
        entry: "teams/sales_bot.hocon",
        file: folder!.path("registries/teams/sales_bot.hocon"),
        serve: true,
        public: true,
      },
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
      "bad name.hocon": true
      "dir/first.hocon": true
      "last.hocon": true
    }`);
    expect(manifest.entries.map((entry) => entry.name)).toEqual(["first", "last"]);
    const file = folder!.path("registries/manifest.hocon");
    expect(manifest.problems).toEqual([
      { file, key: "bad.hocon", reason: "must be true, false or {serve, public}" },
      { file, key: "worse.hocon", reason: "serve and public must be true or false" },
      { file, key: "bad name.hocon", reason: 'network name "bad name" must match [A-Za-z0-9_-]+' },
      { file, key: "dir/first.hocon", reason: "network name first is already taken by first.hocon" },
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
