import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadNetworkAccess, NetworkAccess, NetworkAccessFileError } from "../../src/auth/network-access.js";

describe("network access", () => {
  const access = NetworkAccess.fromDocument({ "finance-app": ["finance/*", "hello_world"], anonymous: ["hello_world"] }, "access.json");

  it("grants names and globs per principal; `*` spans slashes", () => {
    expect(access.allows("finance-app", "finance/ledger")).toBe(true);
    expect(access.allows("finance-app", "finance/eu/ledger")).toBe(true);
    expect(access.allows("finance-app", "hello_world")).toBe(true);
    expect(access.allows("finance-app", "financial")).toBe(false);
  });

  it("a call with no principal is anonymous; a principal the file does not name sees nothing", () => {
    expect(access.allows(undefined, "hello_world")).toBe(true);
    expect(access.allows(undefined, "finance/ledger")).toBe(false);
    expect(access.allows("someone-else", "hello_world")).toBe(false);
  });

  it("without a file everything is open to everyone", () => {
    expect(NetworkAccess.open.isOpen).toBe(true);
    expect(NetworkAccess.open.allows(undefined, "finance/ledger")).toBe(true);
  });

  it("reads HOCON and refuses a file it cannot use, naming the place", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "axon-access-"));
    const hocon = path.join(dir, "access.hocon");
    writeFileSync(hocon, '# who sees what\n"finance-app": ["finance/*"]\nanonymous = [hello_world]\n');
    const loaded = await loadNetworkAccess(hocon);
    expect(loaded.allows("finance-app", "finance/x")).toBe(true);
    expect(loaded.allows(undefined, "hello_world")).toBe(true);

    const bad = path.join(dir, "bad.json");
    for (const [text, place] of [['{"a": "x"}', "at a"], ['{"a": [""]}', "at a[0]"], ['{"bad name": []}', "at bad name"], ["[1]", "top level"]] as const) {
      writeFileSync(bad, text);
      const error = await loadNetworkAccess(bad).catch((thrown: unknown) => thrown);
      expect(error).toBeInstanceOf(NetworkAccessFileError);
      expect((error as Error).message).toContain(place);
    }
  });
});
