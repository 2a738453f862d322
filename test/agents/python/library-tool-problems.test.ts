import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { AgentRegistry } from "../../../src/agents/registry.js";
import { projectRoot } from "../../support/server.js";
import { NetworkFolder } from "../fixture.js";

// The folder above AGENT_TOOL_PATH is on the interpreter's path, as for coded tools: the fake LangChain package is found there.
const packages = path.join(projectRoot, "test/fixtures/python-packages");

let folder: NetworkFolder | undefined;
afterEach(async () => {
  await folder?.remove();
  folder = undefined;
});

async function warningsWith(python: string): Promise<string[]> {
  folder = await NetworkFolder.create({
    "registries/manifest.hocon": `{ "library.hocon": true }`,
    "registries/library.hocon": `{
      toolbox_info_file: "toolbox.hocon"
      tools: [
        { name: "Front", instructions: "Help.", tools: ["Shout", "Absent", "Fetch"] }
        { name: "Shout", toolbox: "shout" }
        { name: "Absent", toolbox: "absent" }
        { name: "Fetch", toolbox: "requests_get" }
      ]
    }`,
    "registries/toolbox.hocon": `{ shout { class: "fakechain.tools.Shout" }, absent { class: "absent_chain.tools.Search" } }`,
  });
  const registry = await AgentRegistry.load({
    manifestFile: folder.path("registries/manifest.hocon"),
    projectRoot: folder.root,
    toolPath: path.join(packages, "coded_tools"),
    python,
  });
  registry.close();
  expect(registry.get("library")).toBeDefined();
  return registry.problems.map((problem) => `${problem.key}: ${problem.reason}`);
}

describe("library tools run in Python, when their network loads", () => {
  it("a package the interpreter lacks is a warning naming the tool, the module, the interpreter and the fix; the others load quietly", async () => {
    expect(await warningsWith("python3")).toEqual([
      expect.stringMatching(
        /^tools\[2\]\.toolbox: absent is the library tool absent_chain\.tools\.Search, which runs in Python and cannot be imported there: No module named absent_chain \((Python \S+|the Python AXON_PYTHON names)\); install its package into the interpreter AXON_PYTHON names, or set AXON_PYTHON to one that has it; calls of Absent will fail$/,
      ),
    ]);
  });

  it("an interpreter that cannot start is a warning for each of them, saying so", async () => {
    const cannotStart =
      "which runs in Python and cannot be imported there: the Python interpreter /nonexistent/python could not check it (spawn /nonexistent/python ENOENT); " +
      "install its package into the interpreter AXON_PYTHON names, or set AXON_PYTHON to one that has it";
    expect(await warningsWith("/nonexistent/python")).toEqual([
      `tools[1].toolbox: shout is the library tool fakechain.tools.Shout, ${cannotStart}; calls of Shout will fail`,
      `tools[2].toolbox: absent is the library tool absent_chain.tools.Search, ${cannotStart}; calls of Absent will fail`,
    ]);
  });
});
