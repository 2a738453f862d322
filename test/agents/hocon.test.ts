import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { HoconError, parseHoconFile, type HoconOptions } from "../../src/agents/hocon.js";
import { NetworkFolder } from "./fixture.js";

let folder: NetworkFolder;

beforeAll(async () => {
  folder = await NetworkFolder.create();
});
afterAll(async () => {
  await folder.remove();
});

async function parse(text: string, options: HoconOptions = {}) {
  const file = `case-${Math.random().toString(36).slice(2)}.hocon`;
  await folder.write({ [file]: text });
  return (await parseHoconFile(folder.path(file), { projectRoot: folder.root, ...options })).value;
}

async function hoconErrorOf(parsing: Promise<unknown>): Promise<HoconError> {
  const error = await parsing.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(HoconError);
  return error as HoconError;
}

function parseError(text: string): Promise<HoconError> {
  return hoconErrorOf(parse(text));
}

describe("HOCON as real networks write it", () => {
  it("reads comments, unquoted keys, trailing commas and triple-quoted strings", async () => {
    const value = await parse(`
      # a hash comment
      // a slash comment
      name: Greeter
      list: [1, 2, 3,]
      prompt: """Line one.
  "Quoted" line two."""
      nested { deeper { key = value } }
    `);
    expect(value).toEqual({
      name: "Greeter",
      list: [1, 2, 3],
      prompt: 'Line one.\n  "Quoted" line two.',
      nested: { deeper: { key: "value" } },
    });
  });

  it("keeps keys in the order they are written", async () => {
    const value = await parse(`zebra: 1\napple: 2\nmango { z: 1, a: 2 }\n`);
    expect(Object.keys(value)).toEqual(["zebra", "apple", "mango"]);
    expect(Object.keys(value.mango as object)).toEqual(["z", "a"]);
  });

  it("keeps numbers numbers (0.5 included) and quoted numbers strings", async () => {
    const value = await parse(`temperature: 0.5\nzero: 0\nnegative: -2\nexponent: 1e3\nquoted: "0.5"\nflag: true\nnothing: null\n`);
    expect(value).toEqual({ temperature: 0.5, zero: 0, negative: -2, exponent: 1000, quoted: "0.5", flag: true, nothing: null });
  });

  it("resolves substitutions, including paths and string concatenation", async () => {
    const value = await parse(`
      defaults { model: "gpt-4o-mini", history { size: 12 } }
      model: \${defaults.model}
      size: \${defaults.history.size}
      greeting: "Hello "\${defaults.model}
      optional: \${?not_defined_anywhere}
    `);
    expect(value.model).toBe("gpt-4o-mini");
    expect(value.size).toBe(12);
    expect(value.greeting).toBe("Hello gpt-4o-mini");
    expect(value).not.toHaveProperty("optional");
  });

  it("merges objects given twice and a substitution followed by an overlay", async () => {
    const value = await parse(`
      llm { model_name: "gpt-4o-mini", temperature: 0.2 }
      llm { max_tokens: 100 }
      tuned: \${llm} { temperature: 0.9 }
    `);
    expect(value.llm).toEqual({ model_name: "gpt-4o-mini", temperature: 0.2, max_tokens: 100 });
    expect(value.tuned).toEqual({ model_name: "gpt-4o-mini", temperature: 0.9, max_tokens: 100 });
  });

  it("finds an include next to the including file before the project root", async () => {
    await folder.write({
      "near/shared/style.hocon": `source: "next to the file"`,
      "shared/style.hocon": `source: "project root"`,
      "near/network.hocon": `include "shared/style.hocon"\nmine: 1`,
    });
    const parsed = await parseHoconFile(folder.path("near/network.hocon"), { projectRoot: folder.root });
    expect(parsed.value).toEqual({ source: "next to the file", mine: 1 });
  });

  it("falls back to the project root for an include not found next to the file", async () => {
    await folder.write({
      "registries/common/aaosa.hocon": `aaosa_instructions: "Decide who answers."`,
      "registries/sub/network.hocon": `include "registries/common/aaosa.hocon"\nprompt: \${aaosa_instructions}`,
    });
    const parsed = await parseHoconFile(folder.path("registries/sub/network.hocon"), { projectRoot: folder.root });
    expect(parsed.value.prompt).toBe("Decide who answers.");
    expect(parsed.files).toContain(folder.path("registries/common/aaosa.hocon"));
  });

  it("treats a missing optional include as empty and a missing required include as an error", async () => {
    expect(await parse(`include "nowhere.hocon"\na: 1`)).toEqual({ a: 1 });
    const error = await parseError(`include required("nowhere.hocon")\na: 1`);
    expect(error.reason).toMatch(/Unable to include/);
  });

  it("says where a missing include was looked for: beside the file, then each include root", async () => {
    await folder.write({ "net/network.hocon": `include "registries/aaosa.hocon"\nmine: 1` });
    const checkout = folder.path("checkout");
    const parsed = await parseHoconFile(folder.path("net/network.hocon"), { includeRoots: [checkout], projectRoot: folder.root });
    expect(parsed.value).toEqual({ mine: 1 });
    expect(parsed.missingIncludes).toEqual([
      {
        include: "registries/aaosa.hocon",
        from: folder.path("net/network.hocon"),
        tried: [folder.path("net/registries/aaosa.hocon"), folder.path("checkout/registries/aaosa.hocon"), folder.path("registries/aaosa.hocon")],
      },
    ]);
  });

  it("a missing include travels with the error it causes", async () => {
    await folder.write({ "net/uses.hocon": `include "registries/defs.hocon"\nprompt: \${aaosa_instructions}` });
    const error = await hoconErrorOf(parseHoconFile(folder.path("net/uses.hocon"), { projectRoot: folder.root }));
    expect(error.reason).toBe("Unable to resolve 'aaosa_instructions'.");
    expect(error.missingIncludes.map((missing) => missing.include)).toEqual(["registries/defs.hocon"]);
  });

  it("looks in the include roots, in order, before the project root", async () => {
    await folder.write({
      "studio/registries/config/llm.hocon": `source: "studio"`,
      "registries/config/llm.hocon": `source: "project root"`,
      "studio/registries/net.hocon": `include "registries/config/llm.hocon"`,
    });
    const parsed = await parseHoconFile(folder.path("studio/registries/net.hocon"), {
      includeRoots: [folder.path("studio")],
      projectRoot: folder.root,
    });
    expect(parsed.value).toEqual({ source: "studio" });
  });
});

describe("hostile HOCON", () => {
  const marker = globalThis as { axonHoconMarker?: unknown };

  it("refuses an eval transform", async () => {
    const error = await parseError(`a: [1, 2] | eval { expr = "globalThis.axonHoconMarker = 'eval'" }`);
    expect(error.reason).toBe("value transforms are not allowed");
    expect(marker.axonHoconMarker).toBeUndefined();
  });

  it("refuses the filter transform, whose expression is compiled as code", async () => {
    const error = await parseError(`a: [1, 2] | filter { expr = "globalThis.axonHoconMarker = 'filter'" }`);
    expect(error.reason).toBe("value transforms are not allowed");
    expect(marker.axonHoconMarker).toBeUndefined();
  });

  it.each([
    ["a .js include", `include "tool.js"`],
    ["an .mjs include", `include "tool.mjs"`],
    ["an explicit script include", `include "script(data.conf)"`],
  ])("refuses %s without running it", async (_, text) => {
    await folder.write({
      "tool.js": `globalThis.axonHoconMarker = "js"; module.exports = { a: 1 };`,
      "tool.mjs": `globalThis.axonHoconMarker = "mjs";`,
      "data.conf": `a: 1`,
    });
    const error = await parseError(text);
    expect(error.reason).toBe("script includes are not allowed");
    expect(marker.axonHoconMarker).toBeUndefined();
  });

  it("never compiles {expressions} in keys or substitution paths", async () => {
    const value = await parse(`
      x { y: 1 }
      "{globalThis.axonHoconMarker = 'key'}" = 1
      x."{globalThis.axonHoconMarker = 'path'}".z = 2
    `);
    expect(value["{globalThis.axonHoconMarker = 'key'}"]).toBe(1);
    await parseError(`x { y: 1 }\na: \${x."{globalThis.axonHoconMarker = 'substitution'}"}`);
    expect(marker.axonHoconMarker).toBeUndefined();
  });

  describe("network includes", () => {
    let hits = 0;
    let url = "";
    const server = createServer((_, response) => {
      hits += 1;
      response.end("stolen: true");
    });
    beforeAll(async () => {
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

    it("refuses http and https includes without fetching them", async () => {
      expect((await parseError(`include "${url}/x.conf"`)).reason).toBe("http and https includes are not allowed");
      expect((await parseError(`include url("${url}/y.conf")`)).reason).toBe("http and https includes are not allowed");
      expect((await parseError(`include "https://127.0.0.1:1/z.conf"`)).reason).toBe("http and https includes are not allowed");
      expect(hits).toBe(0);
    });
  });

  it("refuses classpath includes", async () => {
    expect((await parseError(`include "classpath(package.json)"`)).reason).toMatch(/not allowed/);
  });

  it("refuses includes outside the network's folder and the project root", async () => {
    const error = await parseError(`include "/etc/hostname"\na: 1`);
    expect(error.reason).toMatch(/outside the network folder and the project root/);
  });

  it("never reads process.env, not even through env(...): only the environment it is given", async () => {
    process.env.AXON_HOCON_TEST_SECRET = "s3cret";
    try {
      expect((await parseError(`leak: \${AXON_HOCON_TEST_SECRET}`)).reason).toMatch(/Unable to resolve/);
      await folder.write({ "leaky.conf": `leak: \${AXON_HOCON_TEST_SECRET}` });
      await parseError(`include "env(leaky.conf)"`);
      const given = { environment: { OTHER: "given" } };
      expect((await hoconErrorOf(parse(`leak: \${AXON_HOCON_TEST_SECRET}`, given))).reason).toMatch(/Unable to resolve/);
    } finally {
      delete process.env.AXON_HOCON_TEST_SECRET;
    }
  });
});

describe("substitutions from the environment, as pyhocon resolves them", () => {
  const environment = { MODEL_NAME: "gpt-4o-mini", TEAM: "sales", name: "from the environment" };

  it("${VAR} and ${?VAR} read the environment given", async () => {
    const value = await parse(`model: \${MODEL_NAME}\nteam: \${?TEAM}\ngreeting: "Hello "\${TEAM}`, { environment });
    expect(value).toEqual({ model: "gpt-4o-mini", team: "sales", greeting: "Hello sales" });
  });

  it("${?VAR} of an unset variable leaves the key out; ${VAR} of one is an error naming it", async () => {
    expect(await parse(`kept: 1\ngone: \${?NOT_SET_ANYWHERE}`, { environment })).toEqual({ kept: 1 });
    expect((await hoconErrorOf(parse(`x: \${NOT_SET_ANYWHERE}`, { environment }))).reason).toBe("Unable to resolve 'NOT_SET_ANYWHERE'.");
  });

  it("a value the file defines wins over the environment", async () => {
    expect(await parse(`name: "from the file"\ngreeting: \${name}`, { environment })).toEqual({ name: "from the file", greeting: "from the file" });
  });

  it("an included file reads the same environment", async () => {
    await folder.write({ "env-include.hocon": `included_model: \${MODEL_NAME}` });
    expect(await parse(`include "env-include.hocon"`, { environment })).toEqual({ included_model: "gpt-4o-mini" });
  });
});

describe("HOCON errors", () => {
  it("name the file, the line and the reason of a syntax error", async () => {
    await folder.write({ "broken.hocon": `a {\n  b: 1\n  c: [1, 2\n}\n` });
    const error = await hoconErrorOf(parseHoconFile(folder.path("broken.hocon")));
    expect(error).toMatchObject({ file: folder.path("broken.hocon"), line: 4, reason: "Unexpected token." });
    expect(error.message).toBe(`${folder.path("broken.hocon")}:4:1: Unexpected token.`);
  });

  it("name an unresolved substitution", async () => {
    const error = await parseError(`a: 1\nb: \${missing.value}`);
    expect(error).toMatchObject({ line: 2, reason: "Unable to resolve 'missing.value'." });
  });

  it("name an unclosed quote", async () => {
    expect((await parseError(`a: "never closed\nb: 2`)).reason).toBe("Quoted string not closed!");
  });

  it("name the included file when the error is in there", async () => {
    await folder.write({ "bad-include.hocon": `x: [1,\n}` });
    const error = await parseError(`include "bad-include.hocon"`);
    expect(error.file).toBe(folder.path("bad-include.hocon"));
    expect(error.line).toBe(2);
  });

  it("say so when the file does not exist", async () => {
    const error = await hoconErrorOf(parseHoconFile(folder.path("absent.hocon")));
    expect(error).toMatchObject({ file: folder.path("absent.hocon"), reason: "file not found" });
  });

  it("refuse a top level that is not an object", async () => {
    expect((await parseError(`[1, 2]`)).reason).toBe("the top level must be an object");
  });
});
