import { createHash, randomBytes } from "node:crypto";

/** Spec §10: bearer secrets are at least 32 bytes. */
export const MIN_SECRET_BYTES = 32;

/** 32 random bytes, base64url: 43 characters, safe on a command line, in a header and in a `name = secret` line. */
export function generateSecret(): string {
  return randomBytes(MIN_SECRET_BYTES).toString("base64url");
}

/**
 * What is kept of a secret, in memory and in the database: SHA-256 over a domain-separated input.
 *
 * A plain fast hash is enough because the secrets are not passwords: they are at least 32 bytes, and the generated ones
 * carry 256 random bits, so there is nothing to brute-force; a slow KDF (scrypt) would only add tens of milliseconds of
 * CPU to every authenticated request, an easy lever for overload. The prefix keeps these digests from being
 * interchangeable with any other SHA-256 of the same bytes.
 */
export function secretDigest(secret: string): Buffer {
  return createHash("sha256").update("axon.principal-secret.v1\n", "utf8").update(secret, "utf8").digest();
}
