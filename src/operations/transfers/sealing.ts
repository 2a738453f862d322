import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";

const KEY_BYTES = 32;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

/** What a sealed payload keeps at rest: the GCM nonce, and the ciphertext with its 16-byte tag appended. */
export interface Sealed {
  nonce: Uint8Array<ArrayBuffer>;
  ciphertext: Uint8Array<ArrayBuffer>;
}

/** Thrown when a ciphertext does not open: tampered, moved to another row, or sealed under another key. */
export class UnsealError extends Error {
  override readonly name = "UnsealError";
}

/**
 * AES-256-GCM with a random nonce per payload. The associated data binds the ciphertext to its reference and its
 * owner, so a ciphertext copied into another row (or handed to another client) fails authentication.
 */
export class SealingKey {
  private constructor(private readonly key: Buffer) {}

  static fromBytes(key: Uint8Array): SealingKey {
    if (key.byteLength !== KEY_BYTES) throw new Error(`a sealing key is ${KEY_BYTES} bytes, got ${key.byteLength}`);
    return new SealingKey(Buffer.from(key));
  }

  static generate(): SealingKey {
    return new SealingKey(randomBytes(KEY_BYTES));
  }

  seal(plaintext: Uint8Array, binding: SealBinding): Sealed {
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv("aes-256-gcm", this.key, nonce, { authTagLength: TAG_BYTES });
    cipher.setAAD(associatedData(binding));
    const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
    return { nonce: new Uint8Array(nonce), ciphertext: new Uint8Array(ciphertext) };
  }

  open(sealed: Sealed, binding: SealBinding): Buffer {
    if (sealed.nonce.byteLength !== NONCE_BYTES || sealed.ciphertext.byteLength < TAG_BYTES) throw new UnsealError("malformed sealed payload");
    const body = sealed.ciphertext.subarray(0, sealed.ciphertext.byteLength - TAG_BYTES);
    const tag = sealed.ciphertext.subarray(sealed.ciphertext.byteLength - TAG_BYTES);
    try {
      const decipher = createDecipheriv("aes-256-gcm", this.key, sealed.nonce, { authTagLength: TAG_BYTES });
      decipher.setAAD(associatedData(binding));
      decipher.setAuthTag(tag);
      return Buffer.concat([decipher.update(body), decipher.final()]);
    } catch {
      // OpenSSL's message says nothing useful and nothing of the content; the type says it all.
      throw new UnsealError("the sealed payload does not authenticate");
    }
  }
}

export interface SealBinding {
  id: string;
  clientId: string;
}

function associatedData({ id, clientId }: SealBinding): Buffer {
  return Buffer.from(`axon-sealed-v1\0${id}\0${clientId}`, "utf8");
}

/**
 * The key from `AXON_SEALING_KEY` (base64 of 32 bytes), else the one under the data directory, created on first use.
 * Replicas sharing a database must share the key: give them all the same AXON_SEALING_KEY.
 */
export async function loadSealingKey(configured: string | undefined, dataDir: string): Promise<{ key: SealingKey; source: "env" | "file" | "generated" }> {
  if (configured !== undefined) return { key: SealingKey.fromBytes(decodeKey(configured, "AXON_SEALING_KEY")), source: "env" };
  const file = path.join(dataDir, "sealing.key");
  try {
    // `wx`: of two processes starting on one data directory, one creates the key and the other reads it.
    const key = randomBytes(KEY_BYTES);
    await writeFile(file, `${key.toString("base64")}\n`, { flag: "wx", mode: 0o600 });
    return { key: SealingKey.fromBytes(key), source: "generated" };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
  return { key: SealingKey.fromBytes(decodeKey(await readKeyFile(file), file)), source: "file" };
}

/** The file may have been created a moment ago by another process that has not written it yet. */
async function readKeyFile(file: string): Promise<string> {
  for (let attempt = 0; ; attempt++) {
    const text = (await readFile(file, "utf8")).trim();
    if (text !== "" || attempt >= 20) return text;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function decodeKey(text: string, source: string): Buffer {
  const trimmed = text.trim();
  const key = /^[A-Za-z0-9+/_-]+={0,2}$/.test(trimmed) ? Buffer.from(trimmed.replace(/-/g, "+").replace(/_/g, "/"), "base64") : Buffer.alloc(0);
  // Never quote the value: it is the key.
  if (key.byteLength !== KEY_BYTES) throw new Error(`${source} must be the base64 of ${KEY_BYTES} bytes`);
  return key;
}
