import { mkdtemp, readFile, rm, stat, writeFile, chmod } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import {
  assertSeparateSecrets,
  loadPrincipals,
  parseBearer,
  parsePrincipals,
  PrincipalsFileError,
} from "../../src/auth/principals.js";
import { generateSecret, MIN_SECRET_BYTES, secretDigest } from "../../src/auth/secrets.js";

let folder: string;
beforeAll(async () => {
  folder = await mkdtemp(path.join(tmpdir(), "axon-principals-"));
});
afterAll(async () => {
  await rm(folder, { recursive: true, force: true });
});

const aliceSecret = "alice-secret-0123456789abcdefghijklmnop";
const bobSecret = "bob-secret-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123";

function logger() {
  const lines: { level: string; object: object; message: string }[] = [];
  return {
    lines,
    info: (object: object, message: string) => lines.push({ level: "info", object, message }),
    warn: (object: object, message: string) => lines.push({ level: "warn", object, message }),
  };
}

function parseError(text: string): PrincipalsFileError {
  try {
    parsePrincipals(text, "/etc/axon/clients", "client");
  } catch (error) {
    expect(error).toBeInstanceOf(PrincipalsFileError);
    return error as PrincipalsFileError;
  }
  throw new Error("expected a PrincipalsFileError");
}

describe("the clients and operators files", () => {
  it("read `name = secret` lines, skipping comments and blank lines", () => {
    const set = parsePrincipals(
      ["# clients", "", `alice = ${aliceSecret}`, "   # indented comment", `bob=${bobSecret}`, "  "].join("\n"),
      "/f",
      "client",
    );
    expect(set.names).toEqual(["alice", "bob"]);
    expect(set.authenticate(aliceSecret)).toEqual({ name: "alice", kind: "client" });
    expect(set.authenticate(bobSecret)).toEqual({ name: "bob", kind: "client" });
  });

  it("accept CRLF line ends, a BOM, quoted secrets and trailing comments", () => {
    const set = parsePrincipals(`\uFEFFalice = "${aliceSecret}"\r\nbob = ${bobSecret}   # the build bot\r\n`, "/f", "operator");
    expect(set.authenticate(aliceSecret)).toEqual({ name: "alice", kind: "operator" });
    expect(set.authenticate(bobSecret)).toEqual({ name: "bob", kind: "operator" });
  });

  it("keep a `#` inside a secret", () => {
    const withHash = `${aliceSecret}#part`;
    expect(parsePrincipals(`alice = ${withHash}`, "/f", "client").authenticate(withHash)?.name).toBe("alice");
  });

  it("accept names of letters, digits, dots, underscores and dashes up to 64 characters", () => {
    const long = `a${"b".repeat(63)}`;
    const set = parsePrincipals(`ci.bot_2-x = ${aliceSecret}\n${long} = ${bobSecret}`, "/f", "client");
    expect(set.names).toEqual(["ci.bot_2-x", long]);
  });

  it("refuse a secret shorter than 32 bytes, naming the line and the name but not the secret", () => {
    const short = "x".repeat(MIN_SECRET_BYTES - 1);
    const error = parseError(`# header\nalice = ${short}`);
    expect(error.line).toBe(2);
    expect(error.message).toContain("/etc/axon/clients line 2");
    expect(error.message).toContain("alice");
    expect(error.message).toContain("32 bytes");
    expect(error.message).not.toContain(short);
  });

  it("accept a secret of exactly 32 bytes", () => {
    expect(parsePrincipals(`alice = ${"y".repeat(32)}`, "/f", "client").names).toEqual(["alice"]);
  });

  it("refuse a duplicate name, naming both lines", () => {
    const error = parseError(`alice = ${aliceSecret}\n\nalice = ${bobSecret}`);
    expect(error.line).toBe(3);
    expect(error.message).toContain("line 1");
  });

  it("refuse one secret given to two names", () => {
    const error = parseError(`alice = ${aliceSecret}\nbob = ${aliceSecret}`);
    expect(error.line).toBe(2);
    expect(error.message).toContain("alice");
    expect(error.message).not.toContain(aliceSecret);
  });

  it("refuse a line without `=` without repeating it (it may be a bare secret)", () => {
    const error = parseError(aliceSecret);
    expect(error.line).toBe(1);
    expect(error.message).not.toContain(aliceSecret);
  });

  it("refuse an invalid name without repeating it", () => {
    for (const line of [`-alice = ${aliceSecret}`, `al ice = ${aliceSecret}`, `${"a".repeat(65)} = ${aliceSecret}`, ` = ${aliceSecret}`, `abc+/def==${aliceSecret}`]) {
      const error = parseError(line);
      expect(error.message).not.toContain(aliceSecret);
      expect(error.message).not.toContain("abc+/def");
    }
  });

  it("refuse an empty secret and secrets with spaces or non-ASCII characters", () => {
    expect(parseError("alice =").message).toContain("no secret");
    expect(parseError(`alice = ${aliceSecret} more words`).message).toContain("printable ASCII");
    expect(parseError(`alice = ${aliceSecret}é`).message).toContain("printable ASCII");
  });

  it("an empty file names nobody", () => {
    expect(parsePrincipals("# nobody yet\n", "/f", "client").names).toEqual([]);
  });
});

describe("authentication", () => {
  const set = parsePrincipals(`alice = ${aliceSecret}\nbob = ${bobSecret}`, "/f", "client");

  it("returns the principal whose secret it is", () => {
    expect(set.authenticate(bobSecret)).toEqual({ name: "bob", kind: "client" });
  });

  it("returns nothing for a wrong, truncated, extended, empty or missing secret", () => {
    for (const token of [`${aliceSecret}x`, aliceSecret.slice(0, -1), aliceSecret.toUpperCase(), "", undefined, "x".repeat(10_000)]) {
      expect(set.authenticate(token)).toBeUndefined();
    }
  });

  it("keeps no secret in memory, only digests", () => {
    expect(JSON.stringify(set)).not.toContain(aliceSecret);
    expect(set.digests()).toEqual([
      { name: "alice", digest: secretDigest(aliceSecret).toString("hex") },
      { name: "bob", digest: secretDigest(bobSecret).toString("hex") },
    ]);
  });

  it("keeps clients and operators apart: a client secret never authenticates an operator", () => {
    const operators = parsePrincipals(`admin = ${"op-".repeat(12)}`, "/o", "operator");
    expect(operators.authenticate(aliceSecret)).toBeUndefined();
    expect(set.authenticate("op-".repeat(12))).toBeUndefined();
    expect(operators.authenticate("op-".repeat(12))).toEqual({ name: "admin", kind: "operator" });
  });

  it("refuses to start when one secret is in both files", () => {
    const operators = parsePrincipals(`admin = ${bobSecret}`, "/etc/axon/operators", "operator");
    expect(() => assertSeparateSecrets(set, operators)).toThrow(PrincipalsFileError);
    expect(() => assertSeparateSecrets(set, operators)).not.toThrow(bobSecret);
    expect(() => assertSeparateSecrets(set, parsePrincipals(`admin = ${"z".repeat(40)}`, "/o", "operator"))).not.toThrow();
  });
});

describe("bearer headers", () => {
  it("yield the token, with the scheme in any case and surrounding whitespace ignored", () => {
    expect(parseBearer("Bearer abc")).toBe("abc");
    expect(parseBearer("bearer abc")).toBe("abc");
    expect(parseBearer("  BEARER \t abc  ")).toBe("abc");
  });

  it("yield nothing for other schemes, no token, or a token with spaces", () => {
    for (const header of ["Basic abc", "Bearer", "Bearer ", "Bearerabc", "Bearer a b", "abc", "", undefined, null]) {
      expect(parseBearer(header)).toBeUndefined();
    }
  });
});

describe("loading from disk", () => {
  it("reads an existing file and generates nothing", async () => {
    const file = path.join(folder, "existing-clients");
    await writeFile(file, `alice = ${aliceSecret}\n`, { mode: 0o600 });
    const { principals, generated } = await loadPrincipals(file, "client", { generateIfMissing: { names: ["local"] } });
    expect(generated).toEqual([]);
    expect(principals.names).toEqual(["alice"]);
    expect(principals.file).toBe(file);
  });

  it("a missing file is an error unless generation is asked for", async () => {
    const file = path.join(folder, "absent");
    await expect(loadPrincipals(file, "client")).rejects.toThrow(PrincipalsFileError);
    await expect(loadPrincipals(file, "client")).rejects.toThrow(file);
  });

  it("on first start creates the file, mode 0600, with a random secret per name, returned once", async () => {
    const file = path.join(folder, "new", "nested", "clients");
    const log = logger();
    const { principals, generated } = await loadPrincipals(file, "client", { generateIfMissing: { names: ["local"] }, logger: log });

    expect(generated).toHaveLength(1);
    const [local] = generated;
    expect(local?.name).toBe("local");
    expect(local?.secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(local?.secret ?? "", "base64url")).toHaveLength(32);
    expect(principals.authenticate(local?.secret)).toEqual({ name: "local", kind: "client" });

    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const text = await readFile(file, "utf8");
    expect(text).toContain(`local = ${local?.secret}`);
    expect(text).toMatch(/^# /);

    expect(JSON.stringify(log.lines)).not.toContain(local?.secret);
    expect(log.lines).toEqual([expect.objectContaining({ level: "info", message: "generated secrets file" })]);

    const again = await loadPrincipals(file, "client", { generateIfMissing: { names: ["local"] } });
    expect(again.generated).toEqual([]);
    expect(again.principals.authenticate(local?.secret)).toEqual({ name: "local", kind: "client" });
  });

  it("generates a different secret every time", () => {
    const secrets = new Set(Array.from({ length: 20 }, generateSecret));
    expect(secrets.size).toBe(20);
  });

  it("refuses to generate for an invalid name", async () => {
    await expect(loadPrincipals(path.join(folder, "bad-names"), "client", { generateIfMissing: { names: ["no spaces"] } })).rejects.toThrow(PrincipalsFileError);
  });

  it.skipIf(process.platform === "win32")("warns when others can read the file", async () => {
    const file = path.join(folder, "loose");
    await writeFile(file, `alice = ${aliceSecret}\n`);
    await chmod(file, 0o644);
    const log = logger();
    await loadPrincipals(file, "operator", { logger: log });
    expect(log.lines).toEqual([expect.objectContaining({ level: "warn", object: { file, mode: "644" } })]);
  });

  it("warns when the file names nobody", async () => {
    const file = path.join(folder, "nobody");
    await writeFile(file, "# nobody\n", { mode: 0o600 });
    const log = logger();
    expect((await loadPrincipals(file, "operator", { logger: log })).principals.names).toEqual([]);
    expect(log.lines).toEqual([expect.objectContaining({ level: "warn", message: "secrets file names nobody" })]);
  });

  it("reports a bad line with the file and line number", async () => {
    const file = path.join(folder, "short");
    await writeFile(file, "\n\nalice = tooshort\n", { mode: 0o600 });
    await expect(loadPrincipals(file, "client")).rejects.toThrow(`${file} line 3`);
  });
});
