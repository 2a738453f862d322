import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { locateCodedTool } from "../../../src/agents/coded-tool-location.js";

/** Where coded tools are found: neuro-san's lookup, for Python and TypeScript alike. */
describe("locating a coded tool", () => {
  let checkout: string;
  let toolPath: string;
  const write = (file: string) => {
    mkdirSync(path.dirname(path.join(checkout, file)), { recursive: true });
    writeFileSync(path.join(checkout, file), "");
  };

  beforeAll(() => {
    checkout = mkdtempSync(path.join(os.tmpdir(), "studio-"));
    toolPath = path.join(checkout, "coded_tools");
    for (const file of [
      "coded_tools/basic/accountant.py",
      "coded_tools/math_guy/calculator.py",
      "coded_tools/calculator.py",
      "coded_tools/both/twice.py",
      "coded_tools/both/twice.ts",
      "coded_tools/tools/search.py",
      "neuro_san_studio/coded_tools/utils/ledger.py",
    ]) {
      write(file);
    }
  });

  it("finds a module of a folder above the network's, as neuro-san-studio's basic/music_nerd_pro finds basic/accountant.py", () => {
    expect(locateCodedTool(toolPath, "basic/music_nerd_pro", "accountant.Accountant")).toEqual({
      kind: "python",
      file: path.join(toolPath, "basic/accountant.py"),
      module: "coded_tools.basic.accountant",
      className: "Accountant",
    });
  });

  it("prefers the network's own module to a shared one of the same name", () => {
    expect(locateCodedTool(toolPath, "math_guy", "calculator.Calculator")).toMatchObject({ module: "coded_tools.math_guy.calculator" });
    expect(locateCodedTool(toolPath, "music_nerd", "calculator.Calculator")).toMatchObject({ module: "coded_tools.calculator" });
  });

  it("takes a class written from the project root as a fully qualified module, first", () => {
    expect(locateCodedTool(toolPath, "any", "coded_tools.tools.search.Search")).toMatchObject({ kind: "python", module: "coded_tools.tools.search" });
    expect(locateCodedTool(toolPath, "any", "neuro_san_studio.coded_tools.utils.ledger.Ledger")).toEqual({
      kind: "python",
      file: path.join(checkout, "neuro_san_studio/coded_tools/utils/ledger.py"),
      module: "neuro_san_studio.coded_tools.utils.ledger",
      className: "Ledger",
    });
  });

  it("prefers a TypeScript module to a Python one beside it", () => {
    expect(locateCodedTool(toolPath, "both", "twice.Twice")).toEqual({ kind: "module", file: path.join(toolPath, "both/twice.ts"), exportName: "Twice" });
  });

  it("says where it looked when there is no such module", () => {
    const missing = locateCodedTool(toolPath, "basic/x", "nowhere.Nowhere");
    expect(missing.kind).toBe("missing");
    expect(missing.kind === "missing" && missing.tried).toContain(path.join(toolPath, "basic/nowhere.py"));
  });
});
