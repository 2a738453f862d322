import { timingSafeEqual } from "node:crypto";
import { mkdir, readFile, stat, writeFile } from "node:fs/promises";
import path from "node:path";

import { MIN_SECRET_BYTES, generateSecret, secretDigest } from "./secrets.js";

/**
 * Clients and operators (spec §10): two files of `name = secret` lines as an administrator writes them. Only digests
 * of the secrets stay in memory; the two kinds are separate sets, so a client secret never authenticates an operator.
 *
 * File format: one `name = secret` per line; blank lines and lines starting with `#` are ignored; a ` # comment`
 * after the secret (whitespace before the `#`) is ignored too; the secret may be wrapped in matching quotes. Names
 * match NAME; secrets are printable ASCII without spaces, at least 32 bytes. Errors name the file and line and never
 * repeat a secret (nor anything on a line that could be one).
 */

export type PrincipalKind = "client" | "operator";

export interface Principal {
  name: string;
  kind: PrincipalKind;
}

export interface GeneratedSecret {
  name: string;
  secret: string;
}

export const PRINCIPAL_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export class PrincipalsFileError extends Error {
  override readonly name = "PrincipalsFileError";
  constructor(
    readonly file: string,
    readonly line: number | undefined,
    readonly reason: string,
  ) {
    super(`${file}${line === undefined ? "" : ` line ${line}`}: ${reason}`);
  }
}

interface Entry {
  name: string;
  digest: Buffer;
}

export class PrincipalSet {
  readonly names: readonly string[];

  constructor(
    readonly kind: PrincipalKind,
    readonly file: string,
    private readonly entries: readonly Entry[],
  ) {
    this.names = entries.map((entry) => entry.name);
  }

  /**
   * The principal whose secret this is, if any. Every entry is compared (no exit at the first match) with
   * timingSafeEqual over equal-length digests, so the time taken says nothing about which entry, or how much of one,
   * matched.
   */
  authenticate(bearerToken: string | undefined): Principal | undefined {
    if (bearerToken === undefined || bearerToken === "") return undefined;
    const digest = secretDigest(bearerToken);
    let match: Entry | undefined;
    for (const entry of this.entries) {
      const equal = timingSafeEqual(digest, entry.digest);
      if (equal && match === undefined) match = entry;
    }
    return match === undefined ? undefined : { name: match.name, kind: this.kind };
  }

  /** Hex digests by name: what may be stored in the database (spec §10: hashes only). */
  digests(): { name: string; digest: string }[] {
    return this.entries.map((entry) => ({ name: entry.name, digest: entry.digest.toString("hex") }));
  }

  /** True when any secret of this set is also a secret of `other` (e.g. one line copied into both files). */
  sharesSecretWith(other: PrincipalSet): boolean {
    return this.entries.some((mine) => other.entries.some((theirs) => timingSafeEqual(mine.digest, theirs.digest)));
  }
}

export interface LoadPrincipalsOptions {
  /** First start: when the file does not exist, create it (mode 0600) with a fresh secret for each of these names. */
  generateIfMissing?: { names: string[] };
  /** The one logger (pino) fits; only names, files and modes are logged, never a secret. */
  logger?: { info(object: object, message: string): void; warn(object: object, message: string): void };
}

export interface LoadedPrincipals {
  principals: PrincipalSet;
  /** The secrets this call created, to be shown to the administrator once; empty when the file already existed. */
  generated: GeneratedSecret[];
}

export async function loadPrincipals(
  file: string,
  kind: PrincipalKind,
  options: LoadPrincipalsOptions = {},
): Promise<LoadedPrincipals> {
  const absoluteFile = path.resolve(file);
  let generated: GeneratedSecret[] = [];
  let text = await readIfPresent(absoluteFile);
  if (text === undefined) {
    if (!options.generateIfMissing) throw new PrincipalsFileError(absoluteFile, undefined, "file not found");
    generated = await generateFile(absoluteFile, kind, options.generateIfMissing.names);
    text = await readIfPresent(absoluteFile);
    if (text === undefined) throw new PrincipalsFileError(absoluteFile, undefined, "file vanished right after it was created");
    if (generated.length > 0) {
      options.logger?.info({ file: absoluteFile, kind, names: generated.map((secret) => secret.name) }, "generated secrets file");
    }
  } else {
    await warnIfOthersCanRead(absoluteFile, options.logger);
  }

  const principals = parsePrincipals(text, absoluteFile, kind);
  if (principals.names.length === 0) options.logger?.warn({ file: absoluteFile, kind }, "secrets file names nobody");
  return { principals, generated };
}

/** Parses the text of a clients or operators file. */
export function parsePrincipals(text: string, file: string, kind: PrincipalKind): PrincipalSet {
  const entries: Entry[] = [];
  const lineOfName = new Map<string, number>();
  const seenDigests: { digest: Buffer; name: string; line: number }[] = [];

  text
    .replace(/^\uFEFF/, "")
    .split(/\r?\n/)
    .forEach((raw, index) => {
      const line = index + 1;
      const fail = (reason: string): never => {
        throw new PrincipalsFileError(file, line, reason);
      };
      const trimmed = raw.trim();
      if (trimmed === "" || trimmed.startsWith("#")) return;

      const equals = trimmed.indexOf("=");
      if (equals < 0) fail("expected `name = secret`");
      const name = trimmed.slice(0, equals).trim();
      let secret = trimmed
        .slice(equals + 1)
        .replace(/\s+#.*$/, "")
        .trim();
      const quoted = /^(["'])(.*)\1$/.exec(secret);
      if (quoted) secret = quoted[2] ?? "";

      // An invalid name may be a secret pasted without one, so it is not repeated.
      if (!PRINCIPAL_NAME.test(name)) {
        fail("the name must be 1 to 64 letters, digits, dots, underscores or dashes, starting with a letter or digit");
      }
      const earlierLine = lineOfName.get(name);
      if (earlierLine !== undefined) fail(`${name} is already defined on line ${earlierLine}`);
      if (secret === "") fail(`${name} has no secret after the =`);
      if (!/^[\x21-\x7E]+$/.test(secret)) fail(`the secret of ${name} must be printable ASCII without spaces`);
      if (Buffer.byteLength(secret, "utf8") < MIN_SECRET_BYTES) {
        fail(`the secret of ${name} is shorter than ${MIN_SECRET_BYTES} bytes`);
      }

      const digest = secretDigest(secret);
      const sameSecret = seenDigests.find((seen) => seen.digest.equals(digest));
      if (sameSecret) fail(`${name} has the same secret as ${sameSecret.name} on line ${sameSecret.line}`);

      lineOfName.set(name, line);
      seenDigests.push({ digest, name, line });
      entries.push({ name, digest });
    });
  return new PrincipalSet(kind, file, entries);
}

/**
 * `Authorization: Bearer <token>` -> the token. The scheme is case-insensitive (RFC 9110 §11.1), surrounding
 * whitespace is ignored, and anything else (another scheme, no token, a token with spaces) is undefined.
 */
export function parseBearer(authorizationHeader: string | null | undefined): string | undefined {
  if (typeof authorizationHeader !== "string") return undefined;
  const match = /^\s*bearer\s+(\S+)\s*$/i.exec(authorizationHeader);
  return match?.[1];
}

/** A secret in both files would let a client act as an operator; refuse to start with it. */
export function assertSeparateSecrets(clients: PrincipalSet, operators: PrincipalSet): void {
  if (clients.sharesSecretWith(operators)) {
    throw new PrincipalsFileError(operators.file, undefined, `a secret in it is also a client secret in ${clients.file}`);
  }
}

async function readIfPresent(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

async function generateFile(file: string, kind: PrincipalKind, names: string[]): Promise<GeneratedSecret[]> {
  for (const name of names) {
    if (!PRINCIPAL_NAME.test(name)) throw new PrincipalsFileError(file, undefined, `cannot generate a secret for the invalid name ${JSON.stringify(name)}`);
  }
  const secrets = names.map((name) => ({ name, secret: generateSecret() }));
  const text = [
    `# Axon ${kind}s: one \`name = secret\` line each; secrets are at least ${MIN_SECRET_BYTES} bytes. Make one with`,
    `#   node -e "console.log(require('node:crypto').randomBytes(32).toString('base64url'))"`,
    "# Generated on first start. Keep this file private (mode 0600).",
    ...secrets.map(({ name, secret }) => `${name} = ${secret}`),
    "",
  ].join("\n");

  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  try {
    // `wx`: another replica starting at the same moment may have won; then its file (and its secrets) count.
    await writeFile(file, text, { encoding: "utf8", mode: 0o600, flag: "wx" });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return [];
    throw error;
  }
  return secrets;
}

async function warnIfOthersCanRead(file: string, logger: LoadPrincipalsOptions["logger"]): Promise<void> {
  if (process.platform === "win32" || !logger) return;
  const { mode } = await stat(file);
  if ((mode & 0o077) !== 0) {
    logger.warn({ file, mode: (mode & 0o777).toString(8) }, "secrets file is readable by other users; chmod 600 it");
  }
}
