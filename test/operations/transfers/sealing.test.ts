import { randomBytes } from "node:crypto";
import { mkdtempSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadSealingKey, SealingKey, UnsealError } from "../../../src/operations/transfers/sealing.js";

const binding = { id: "sealed_aaaaaaaaaaaaaaaaaaaaaaaa", clientId: "alice" };

describe("SealingKey", () => {
  it("opens what it sealed, with a fresh nonce each time", () => {
    const key = SealingKey.generate();
    const plaintext = Buffer.from("the content");
    const first = key.seal(plaintext, binding);
    const second = key.seal(plaintext, binding);
    expect(Buffer.from(first.nonce).equals(Buffer.from(second.nonce))).toBe(false);
    expect(Buffer.from(first.ciphertext).includes(plaintext)).toBe(false);
    expect(key.open(first, binding).equals(plaintext)).toBe(true);
  });

  it("refuses a flipped byte, another reference, another owner and another key, saying nothing of the content", () => {
    const key = SealingKey.generate();
    const sealed = key.seal(Buffer.from("secret content"), binding);
    const flipped = new Uint8Array(sealed.ciphertext);
    flipped[0] = flipped[0]! ^ 0x80;
    const attempts = [
      () => key.open({ nonce: sealed.nonce, ciphertext: flipped }, binding),
      () => key.open(sealed, { ...binding, id: "sealed_bbbbbbbbbbbbbbbbbbbbbbbb" }),
      () => key.open(sealed, { ...binding, clientId: "bob" }),
      () => SealingKey.generate().open(sealed, binding),
      () => key.open({ nonce: new Uint8Array(0), ciphertext: new Uint8Array(0) }, binding),
    ];
    for (const attempt of attempts) {
      expect(attempt).toThrow(UnsealError);
      try {
        attempt();
      } catch (error) {
        expect(String((error as Error).message)).not.toContain("secret content");
      }
    }
  });

  it("takes only 32-byte keys", () => {
    expect(() => SealingKey.fromBytes(new Uint8Array(16))).toThrow(/32 bytes/);
  });
});

describe("loadSealingKey", () => {
  const dataDir = () => mkdtempSync(path.join(os.tmpdir(), "axon-sealing-"));

  it("uses AXON_SEALING_KEY when given, and refuses a malformed one without quoting it", async () => {
    const bytes = randomBytes(32);
    const { key, source } = await loadSealingKey(bytes.toString("base64"), dataDir());
    expect(source).toBe("env");
    const sealed = SealingKey.fromBytes(bytes).seal(Buffer.from("x"), binding);
    expect(key.open(sealed, binding).toString()).toBe("x");
    await expect(loadSealingKey("not-a-key-at-all", dataDir())).rejects.toThrow(/^AXON_SEALING_KEY must be the base64 of 32 bytes$/);
    await expect(loadSealingKey(randomBytes(31).toString("base64"), dataDir())).rejects.toThrow(/base64 of 32 bytes/);
  });

  it("generates a key once under the data directory, readable by its owner only, and reads it back after", async () => {
    const dir = dataDir();
    const first = await loadSealingKey(undefined, dir);
    expect(first.source).toBe("generated");
    expect(statSync(path.join(dir, "sealing.key")).mode & 0o777).toBe(0o600);
    const second = await loadSealingKey(undefined, dir);
    expect(second.source).toBe("file");
    expect(second.key.open(first.key.seal(Buffer.from("kept"), binding), binding).toString()).toBe("kept");
  });

  it("two processes starting at once on one data directory end up with the same key", async () => {
    const dir = dataDir();
    const loaded = await Promise.all(Array.from({ length: 5 }, () => loadSealingKey(undefined, dir)));
    expect(loaded.filter((each) => each.source === "generated")).toHaveLength(1);
    const sealed = loaded[0]!.key.seal(Buffer.from("shared"), binding);
    for (const { key } of loaded) expect(key.open(sealed, binding).toString()).toBe("shared");
  });
});
