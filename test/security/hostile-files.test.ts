import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HoconError, parseHoconFile } from "../../src/agents/hocon.js";
import { AgentRegistry } from "../../src/agents/registry.js";
import { REDACTED, SANITIZED_MAX_LENGTH, sanitizeProviderError, sanitizeProviderText } from "../../src/operations/sanitize.js";
import { NetworkFolder, smallNetwork } from "../agents/fixture.js";
import { within } from "../support/wait.js";

declare global {
  // Set only if network text managed to run code.
  var __axonHostileRan: unknown;
}


/** Pieces of HOCON syntax, including every feature that executes code, fetches or reads the environment upstream. */
const hoconPiece = fc.oneof(
  fc.constantFrom(
    "{", "}", "[", "]", ":", "=", ",", "\n", '"', "'", "\\", "${", "${?", "+=", ":=", "//", "#", '"""', "include ", "required(", "file(",
    "url(", "classpath(", '"x.js"', '"http://127.0.0.1:1/x"', "| eval", "| filter", "{globalThis.__axonHostileRan = 1}",
    "${ {globalThis.__axonHostileRan = 1} }", "{process.exit(1)}", "tools", "name", "class", "../../etc/passwd.X", "HOME", "PATH",
    "${HOME}", "@", "0.5", ".5", "1e400", "true", "null", "\u0000", "\u202e", "\ud800",
  ),
  fc.string({ maxLength: 12 }),
);
const hoconText = fc.oneof(fc.array(hoconPiece, { maxLength: 40 }).map((pieces) => pieces.join(" ")), fc.string({ maxLength: 300 }));

describe("hostile network files", () => {
  let folder: NetworkFolder;
  beforeAll(async () => {
    folder = await NetworkFolder.create({ "registries/manifest.hocon": `"net.hocon": true\n"good.hocon": true`, "registries/good.hocon": smallNetwork("Good") });
  });
  afterAll(async () => {
    await folder?.remove();
    delete globalThis.__axonHostileRan;
  });

  it("arbitrary text parses to an object or a HoconError, promptly, and never runs code", async () => {
    await fc.assert(
      fc.asyncProperty(hoconText, async (text) => {
        await folder.write({ "registries/net.hocon": text });
        try {
          const parsed = await within(2000, parseHoconFile(folder.path("registries/net.hocon"), { projectRoot: folder.root }), "parsing");
          expect(typeof parsed.value).toBe("object");
        } catch (error) {
          expect(error, String(error)).toBeInstanceOf(HoconError);
        }
        expect(globalThis.__axonHostileRan).toBeUndefined();
      }),
      { numRuns: 150 },
    );
  });

  it("loaded through the registry, arbitrary text is a network or a reported problem, and the good network stays served", async () => {
    await fc.assert(
      fc.asyncProperty(hoconText, async (text) => {
        await folder.write({ "registries/net.hocon": text });
        const registry = await within(3000, AgentRegistry.load({ manifestFile: folder.path("registries/manifest.hocon"), projectRoot: folder.root }), "loading");
        try {
          expect(registry.get("good")).toBeDefined();
          const problem = registry.problems.find((p) => p.file === folder.path("registries/net.hocon"));
          expect(registry.get("net") !== undefined || problem !== undefined).toBe(true);
          expect(globalThis.__axonHostileRan).toBeUndefined();
        } finally {
          registry.close();
        }
      }),
      { numRuns: 60 },
    );
  });

  it.each([
    ["a substitution expression", "a = 1\nb = ${ {globalThis.__axonHostileRan = 1} }", /Unexpected token/],
    ["an expression in a key path", "{globalThis.__axonHostileRan = 1} = 2", /Unexpected token/],
    ["a value transform", 'a = "globalThis.__axonHostileRan = 1" | eval', /value transforms are not allowed/],
    ["a script include", 'include "hostile.js"', /script includes are not allowed/],
    ["an http include", 'include url("http://127.0.0.1:9/x.conf")', /http and https includes are not allowed/],
    ["an include that leaves the folder", 'include file("../../../../../../etc/passwd")', /outside the network folder and the project root/],
  ])("%s is refused and runs nothing", async (_name, text, reason) => {
    await folder.write({ "registries/net.hocon": text, "registries/hostile.js": "globalThis.__axonHostileRan = 1;\nexport default {};\n" });
    const parsing = within(2000, parseHoconFile(folder.path("registries/net.hocon"), { projectRoot: folder.root }), "parsing");
    await expect(parsing).rejects.toBeInstanceOf(HoconError);
    await expect(parsing).rejects.toMatchObject({ reason: expect.stringMatching(reason) });
    expect(globalThis.__axonHostileRan).toBeUndefined();
  });

  it.each(["../../etc/passwd.X", "..passwd.X", "/etc/passwd.X", "tools/../../x.Y", "a\\b.C", "a..b.C", "%2e%2e.X"])(
    "a coded tool class %s is a reported problem, not a path",
    async (className) => {
      await folder.write({
        "registries/net.hocon": `tools: [
          { name: "Front", function { description: "d" }, instructions: "Help.", tools: ["Tool"] }
          { name: "Tool", function { description: "t" }, class: ${JSON.stringify(className)} }
        ]`,
      });
      const registry = await AgentRegistry.load({ manifestFile: folder.path("registries/manifest.hocon"), projectRoot: folder.root });
      try {
        expect(registry.get("net")).toBeUndefined();
        expect(registry.problems).toContainEqual(
          expect.objectContaining({ file: folder.path("registries/net.hocon"), key: "tools[1].class", reason: "must be module.ClassName, with dotted identifiers only" }),
        );
      } finally {
        registry.close();
      }
    },
  );
});

/** A secret as providers issue them: 32 to 64 token characters. */
const secretArbitrary = fc.string({ unit: fc.constantFrom(..."ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"), minLength: 32, maxLength: 64 });
/** Characters that might split a secret in a provider's text without changing how it reads. */
const splitter = fc.constantFrom(" ", "\n", "\t", "\u200b", "\u200d", "\ufeff", "\u2060", "\u0007", "\u001b[31m", "\u202e", "\r\n");

const secretInText = fc
  .record({
    before: fc.string({ maxLength: 400 }),
    after: fc.string({ maxLength: 400 }),
    secret: secretArbitrary,
    splits: fc.array(fc.tuple(fc.nat(), splitter), { maxLength: 3 }),
  })
  .map(({ before, after, secret, splits }) => {
    let spelled = secret;
    for (const [at, piece] of splits) {
      const index = 1 + (at % (spelled.length - 1));
      spelled = spelled.slice(0, index) + piece + spelled.slice(index);
    }
    // A separator keeps the secret its own token, as it is in a real message.
    return { secret, text: `${before} ${spelled} ${after}` };
  });

function expectClean(output: string, secret: string): void {
  expect(output).not.toContain(secret);
  expect(output.replace(/\s/g, "")).not.toContain(secret);
  expect(Array.from(output).length).toBeLessThanOrEqual(SANITIZED_MAX_LENGTH);
  expect(output).not.toMatch(/[\p{Cc}\p{Cf}]/u);
}

describe("the provider text sanitizer, for any text around a secret", () => {
  it("never lets the configured secret through, however it is split, and keeps the result short and printable", () => {
    fc.assert(
      fc.property(secretInText, ({ secret, text }) => {
        expectClean(sanitizeProviderText(text, { secrets: [secret] }), secret);
      }),
      { numRuns: 300 },
    );
  });

  it("hides a secret it was not told about when it looks like one (long, mixed, not repetitive)", () => {
    const unknownSecret = fc.string({ unit: fc.constantFrom(..."ABCDEFabcdef0123456789"), minLength: 40, maxLength: 64 });
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), unknownSecret, fc.string({ maxLength: 200 }), (before, secret, after) => {
        fc.pre(/[a-f]/.test(secret) && /[A-F0-9]/.test(secret) && new Set(secret).size >= 12);
        const output = sanitizeProviderText(`${before} ${secret} ${after}`);
        expectClean(output, secret);
      }),
      { numRuns: 200 },
    );
  });

  it("error bodies (JSON, bytes, HTML, text) yield only a sanitized message", () => {
    const body = secretInText.chain(({ secret, text }) =>
      fc
        .constantFrom<(text: string) => unknown>(
          (t) => JSON.stringify({ error: { message: t } }),
          (t) => ({ message: t, stack: "at x.ts:1" }),
          (t) => new TextEncoder().encode(JSON.stringify({ errors: [{ message: t }] })),
          (t) => `<html><head><title>${t.replace(/[<>]/g, "")}</title></head></html>`,
          (t) => t,
        )
        .map((wrap) => ({ secret, body: wrap(text) })),
    );
    fc.assert(
      fc.property(body, ({ secret, body }) => {
        expectClean(sanitizeProviderError(body, { secrets: [secret] }), secret);
      }),
      { numRuns: 200 },
    );
  });

  it("a huge body is cut to the limit without a secret surviving at the cut", () => {
    fc.assert(
      fc.property(secretArbitrary, fc.nat({ max: 70_000 }), (secret, at) => {
        const filler = "word ".repeat(14_000);
        const text = `${filler.slice(0, at)} ${secret} ${filler.slice(at)}`;
        const output = sanitizeProviderText(text, { secrets: [secret] });
        expectClean(output, secret);
        if (text.indexOf(secret) < 400) expect(output).toContain(REDACTED);
      }),
      { numRuns: 30 },
    );
  });
});
