import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { CliFailure, ExitStatus } from "./cli-failure.js";
import type { CliContext } from "./context.js";
import { printJson, printLine } from "./output.js";

/**
 * `axon git install|status|uninstall`: the agent's side of the Git broker is plain Git, told by two kinds of entries
 * in its user-level configuration to go through Axon: `url.<axon>/git/<host>/.insteadOf <host's URL>` rewrites the
 * remotes it already has, and a credential helper scoped to Axon's origin answers with the Axon client secret (from
 * AXON_CLIENT_SECRET or --secret-file), so no remote and no Git credential store ever holds a secret.
 */

export interface GitInstallOptions {
  host: string;
  /** The URL prefix agents use for the host (https://github.com/ for github). */
  rewrite?: string;
  secretFile?: string;
}

/** `axon git install`: writes the rewrites and the helper into the user's global Git configuration. */
export async function installGit(context: CliContext, options: GitInstallOptions): Promise<void> {
  const axon = axonOrigin(context.url);
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(options.host)) throw new CliFailure(`--host ${JSON.stringify(options.host)} is not a host name of Axon's Git hosts file`, ExitStatus.usage);
  const prefix = `${axon}/git/${options.host}/`;
  const rewrites = options.rewrite !== undefined ? [withSlash(options.rewrite)] : defaultRewrites(options.host);
  const secretFile = options.secretFile === undefined ? undefined : path.resolve(options.secretFile);
  if (secretFile !== undefined) await readSecretFile(secretFile);

  const rewriteKey = `url.${prefix}.insteadOf`;
  const existing = await gitConfig(["--get-all", rewriteKey]).catch(() => "");
  for (const rewrite of rewrites) if (!existing.split("\n").includes(rewrite)) await gitConfig(["--add", rewriteKey, rewrite]);

  // An empty helper first clears the helpers configured for every URL (a credential store would keep the secret).
  const helperKey = `credential.${axon}.helper`;
  await gitConfig(["--unset-all", helperKey]).catch(() => undefined);
  await gitConfig(["--add", helperKey, ""]);
  await gitConfig(["--add", helperKey, helperCommand(axon, secretFile)]);

  if (context.json) return printJson({ axon, host: options.host, rewrites: rewrites.map((from) => ({ from, to: prefix })), credential_helper: helperKey });
  for (const rewrite of rewrites) printLine(`${rewrite} -> ${prefix}`);
  printLine(`credential helper for ${axon}: ${secretFile === undefined ? "the secret in AXON_CLIENT_SECRET" : `the secret in ${secretFile}`}`);
}

/** `axon git status`: what the global configuration sends through this Axon, and whether the helper finds a secret. */
export async function gitStatus(context: CliContext, secretFile: string | undefined): Promise<void> {
  const axon = axonOrigin(context.url);
  const rewrites = await configuredRewrites(axon);
  const helpers = (await gitConfig(["--get-all", `credential.${axon}.helper`]).catch(() => "")).split("\n").filter((line) => line !== "");
  const secret = await findSecret(secretFile).then(
    (found) => found.source,
    () => undefined,
  );
  if (context.json) return printJson({ axon, rewrites, credential_helper: helpers.length > 0, secret: secret ?? null });
  if (rewrites.length === 0) printLine(`no Git remote goes through ${axon} (run axon git install)`);
  for (const { from, to } of rewrites) printLine(`${from} -> ${to}`);
  printLine(helpers.length > 0 ? `credential helper for ${axon}: installed` : `no credential helper for ${axon}`);
  printLine(secret === undefined ? "no client secret found: set AXON_CLIENT_SECRET or pass --secret-file" : `client secret: from ${secret}`);
}

/** `axon git uninstall`: removes every rewrite to this Axon and its helper. */
export async function uninstallGit(context: CliContext): Promise<void> {
  const axon = axonOrigin(context.url);
  const rewrites = await configuredRewrites(axon);
  for (const section of new Set(rewrites.map(({ to }) => `url.${to}`))) await gitConfig(["--remove-section", section]).catch(() => undefined);
  await gitConfig(["--remove-section", `credential.${axon}`]).catch(() => undefined);
  if (context.json) return printJson({ axon, removed: rewrites });
  printLine(rewrites.length === 0 ? `nothing went through ${axon}` : `removed ${rewrites.length} rewrite${rewrites.length === 1 ? "" : "s"} and the credential helper for ${axon}`);
}

/**
 * `axon git credential <get|store|erase>`: Git's credential helper protocol (gitcredentials). `get` answers only for
 * Axon's own origin, with any user name and the client secret as the password; Git's `store` and `erase` are ignored,
 * since nothing is kept.
 */
export async function gitCredential(context: CliContext, action: string, secretFile: string | undefined): Promise<void> {
  if (action !== "get") return;
  const request = parseCredentialRequest(await readStdin());
  const axon = new URL(axonOrigin(context.url));
  const asked = `${request.protocol ?? ""}://${request.host ?? ""}`;
  if (asked !== `${axon.protocol.replace(/:$/, "")}://${axon.host}`) return; // not Axon: say nothing
  const { secret } = await findSecret(secretFile);
  process.stdout.write(`username=axon\npassword=${secret}\n`);
}

function defaultRewrites(host: string): string[] {
  const name = host === "github" ? "github.com" : host === "gitlab" ? "gitlab.com" : host === "huggingface" ? "huggingface.co" : host;
  return [`https://${name}/`, ...(host === "github" ? ["git@github.com:", "ssh://git@github.com/"] : [])];
}

async function configuredRewrites(axon: string): Promise<{ from: string; to: string }[]> {
  const lines = (await gitConfig(["--get-regexp", "^url\\..*\\.insteadof$"]).catch(() => "")).split("\n");
  return lines.flatMap((line) => {
    const match = /^url\.(.*)\.insteadof (.*)$/i.exec(line);
    return match && match[1]!.startsWith(`${axon}/git/`) ? [{ from: match[2]!, to: match[1]! }] : [];
  });
}

/** The helper command Git runs: this very CLI, by absolute paths, so a PATH that changes cannot swap it. */
function helperCommand(axon: string, secretFile: string | undefined): string {
  const cli = path.resolve(process.argv[1] ?? "axon");
  const quoted = (value: string) => `'${value.replace(/'/g, `'\\''`)}'`;
  return `!${quoted(process.execPath)} ${quoted(cli)} --url ${quoted(axon)} git credential${secretFile === undefined ? "" : ` --secret-file ${quoted(secretFile)}`}`;
}

async function findSecret(secretFile: string | undefined): Promise<{ secret: string; source: string }> {
  if (secretFile !== undefined) return { secret: await readSecretFile(path.resolve(secretFile)), source: path.resolve(secretFile) };
  const secret = process.env.AXON_CLIENT_SECRET?.trim();
  if (secret) return { secret, source: "AXON_CLIENT_SECRET" };
  throw new CliFailure("no client secret: set AXON_CLIENT_SECRET or pass --secret-file", ExitStatus.auth);
}

async function readSecretFile(file: string): Promise<string> {
  const text = await readFile(file, "utf8").catch((error: NodeJS.ErrnoException) => {
    throw new CliFailure(`cannot read the secret file ${file} (${error.code ?? error.message})`, ExitStatus.auth);
  });
  const secret = text.trim();
  if (secret === "" || /\s/.test(secret)) throw new CliFailure(`${file} must hold the client secret alone`, ExitStatus.auth);
  return secret;
}

function axonOrigin(url: string): string {
  return new URL(url).origin;
}

function withSlash(url: string): string {
  return url.endsWith("/") || url.endsWith(":") ? url : `${url}/`;
}

function parseCredentialRequest(text: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const line of text.split("\n")) {
    const equals = line.indexOf("=");
    if (equals > 0) fields[line.slice(0, equals)] = line.slice(equals + 1);
  }
  return fields;
}

async function readStdin(): Promise<string> {
  const pieces: Buffer[] = [];
  for await (const piece of process.stdin as AsyncIterable<Buffer>) {
    pieces.push(piece);
    if (pieces.reduce((size, chunk) => size + chunk.length, 0) > 64 * 1024) break;
  }
  return Buffer.concat(pieces).toString("utf8");
}

function gitConfig(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile("git", ["config", "--global", ...args], (error, stdout, stderr) => {
      if (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") return reject(new CliFailure("git is not installed (or not on PATH)", ExitStatus.failed));
        return reject(new CliFailure(stderr.trim() || error.message, ExitStatus.failed));
      }
      resolve(stdout.trim());
    });
  });
}
