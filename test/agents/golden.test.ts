import { mkdir, readFile, readdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";

import type { AgentNetwork } from "../../src/agents/agent-network.js";
import { AgentRegistry } from "../../src/agents/registry.js";

/**
 * Every example network in registries/, parsed and modelled, against checked-in JSON.
 * Regenerate after an intended change with: UPDATE_GOLDEN=1 npm test -- test/agents/golden
 */
const projectRoot = path.resolve(import.meta.dirname, "../..");
const goldenFolder = path.join(import.meta.dirname, "golden");
const updating = process.env.UPDATE_GOLDEN === "1";

const registry = await AgentRegistry.load({
  manifestFile: path.join(projectRoot, "registries/manifest.hocon"),
  projectRoot,
});

function goldenOf(network: AgentNetwork) {
  return {
    name: network.name,
    public: network.public,
    listing: registry.listPublic().find((listing) => listing.agentName === network.name) ?? null,
    limits: network.limits,
    nodes: [...network.nodes.values()].map((node) => ({
      name: node.name,
      kind: node.kind,
      displayAs: node.displayAs,
      tools: node.tools,
      className: node.className,
      external: node.external,
    })),
    function: registry.function(network.name),
    connectivity: registry.connectivity(network.name),
    raw: network.raw,
  };
}

describe("the example networks", () => {
  it("all load without problems", () => {
    expect(registry.problems).toEqual([]);
    expect(registry.networks().length).toBeGreaterThan(0);
  });

  it.each(registry.networks().map((network) => [network.name, network] as const))("%s matches its golden JSON", async (name, network) => {
    const file = path.join(goldenFolder, `${name}.json`);
    const actual = JSON.parse(JSON.stringify(goldenOf(network))) as unknown;
    if (updating) {
      await mkdir(goldenFolder, { recursive: true });
      await writeFile(file, `${JSON.stringify(actual, null, 2)}\n`);
      return;
    }
    expect(actual).toEqual(JSON.parse(await readFile(file, "utf8")));
  });

  it("have no golden files left over from removed networks", async () => {
    const goldenNames = (await readdir(goldenFolder)).filter((file) => file.endsWith(".json")).map((file) => file.slice(0, -5));
    expect(goldenNames.sort()).toEqual(registry.networks().map((network) => network.name).sort());
  });
});
