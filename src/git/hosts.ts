import { configuredBaseUrl } from "../base-url.js";
import { createPrivateKey, type KeyObject } from "node:crypto";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { HoconError, parseHoconFile, type JsonValue } from "../agents/hocon.js";

/** How Axon proves itself to a host; the secret itself stays in the environment or the key file, never here. */
export type GitHostCredential =
  /** A token from an environment variable, sent as HTTP Basic (`username:token`) or as a bearer. */
  | { kind: "token"; tokenEnv: string; username: string; scheme: "basic" | "bearer" }
  /** A GitHub App: installation tokens minted per repository with the permissions each request needs. */
  | { kind: "github_app"; appId: string; privateKey: KeyObject; apiUrl: string; webhookSecretEnv: string | undefined }
  /** None: the host serves public repositories to anyone (`anonymous_fetch`), and pushes are refused. */
  | { kind: "none" };

/** One host of `AXON_GIT_HOSTS_FILE`, served at `/git/<name>/<owner>/<repo>.git/...`. */
export interface GitHost {
  name: string;
  /** `scheme://host[:port]` of `base_url`. */
  origin: string;
  /** The path of `base_url` without its trailing slash: repositories are `<base>/<owner>/<repo>.git`. */
  basePath: string;
  credential: GitHostCredential;
  /** Fetches (clone, fetch, LFS downloads) go upstream without a credential: the host's public repositories. */
  anonymousFetch: boolean;
}

/** A broken hosts file: the server does not start with it. */
export class GitHostsFileError extends Error {
  override readonly name = "GitHostsFileError";
  constructor(
    readonly file: string,
    /** The offending key path (`github.base_url`), empty for the file as a whole. */
    readonly key: string,
    readonly reason: string,
  ) {
    super(`${file}${key === "" ? "" : ` at ${key}`}: ${reason}`);
  }
}

export class GitHosts {
  private readonly byName: ReadonlyMap<string, GitHost>;

  constructor(
    hosts: Iterable<GitHost> = [],
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {
    this.byName = new Map([...hosts].map((host) => [host.name, host]));
  }

  get(name: string): GitHost | undefined {
    return this.byName.get(name);
  }

  all(): GitHost[] {
    return [...this.byName.values()];
  }

  /** An environment variable's value, read when needed: a missing one fails the requests that need it, not the start. */
  secret(name: string | undefined): string | undefined {
    const value = name === undefined ? undefined : this.env[name];
    return value === undefined || value === "" ? undefined : value;
  }
}

const HOST_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const ENVIRONMENT_VARIABLE = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** RFC 9110 token characters: a Basic user name may not break the header. */
const USERNAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/;
const FIELDS = new Set(["base_url", "token_env", "username", "scheme", "github_app", "webhook_secret_env", "anonymous_fetch"]);
const APP_FIELDS = new Set(["app_id", "private_key_file", "api_url"]);

/**
 * Reads `AXON_GIT_HOSTS_FILE` (HOCON or JSON), one key per host name:
 * `github { base_url: "https://github.com", token_env: "GITHUB_TOKEN" }`, or with
 * `github_app { app_id, private_key_file, api_url }` and `webhook_secret_env`; `anonymous_fetch: true` fetches public
 * repositories without a credential. No file = no hosts. A file that is set but missing or invalid (a key file that
 * cannot be read included) throws GitHostsFileError naming the file and the key.
 */
export async function loadGitHosts(file: string | undefined, env: NodeJS.ProcessEnv = process.env, options: { projectRoot?: string } = {}): Promise<GitHosts> {
  if (file === undefined) return new GitHosts([], env);
  const absoluteFile = path.resolve(file);
  let value;
  try {
    ({ value } = await parseHoconFile(absoluteFile, options.projectRoot === undefined ? {} : { projectRoot: options.projectRoot }));
  } catch (error) {
    if (error instanceof HoconError) throw new GitHostsFileError(error.file, "", error.line === undefined ? error.reason : `${error.reason} (line ${error.line})`);
    throw error;
  }
  const hosts = await Promise.all(Object.entries(value).map(([name, entry]) => parseHost(absoluteFile, name, entry)));
  return new GitHosts(hosts, env);
}

async function parseHost(file: string, name: string, entry: JsonValue): Promise<GitHost> {
  const fail = (key: string, reason: string): never => {
    throw new GitHostsFileError(file, key === "" ? name : `${name}.${key}`, reason);
  };
  if (!HOST_NAME.test(name)) fail("", "a host name is 1 to 64 letters, digits, dots, dashes or underscores, starting with a letter or digit");
  if (!isObject(entry)) return fail("", "must be an object");
  for (const key of Object.keys(entry)) if (!FIELDS.has(key)) fail(key, `unknown field (expected ${[...FIELDS].join(", ")})`);

  const url = configuredBaseUrl(entry["base_url"], (reason) => fail("base_url", reason));
  const anonymousFetch = entry["anonymous_fetch"] ?? false;
  if (typeof anonymousFetch !== "boolean") fail("anonymous_fetch", "must be true or false");

  const tokenEnv = entry["token_env"];
  const app = entry["github_app"];
  if (tokenEnv !== undefined && app !== undefined) fail("", "takes token_env or github_app, not both");
  let credential: GitHostCredential = { kind: "none" };
  if (tokenEnv !== undefined) {
    if (typeof tokenEnv !== "string" || !ENVIRONMENT_VARIABLE.test(tokenEnv)) fail("token_env", "must name the environment variable holding the token");
    const username = entry["username"] ?? "x-access-token";
    if (typeof username !== "string" || !USERNAME.test(username)) fail("username", "must be a user name of letters, digits and . _ - (the token is the password)");
    const scheme = entry["scheme"] ?? "basic";
    if (scheme !== "basic" && scheme !== "bearer") fail("scheme", 'must be "basic" (the token as the password) or "bearer"');
    credential = { kind: "token", tokenEnv: tokenEnv as string, username: username as string, scheme: scheme as "basic" | "bearer" };
  } else {
    for (const key of ["username", "scheme"]) if (entry[key] !== undefined) fail(key, "goes with token_env");
  }
  if (app !== undefined) credential = await parseApp(file, app, (key, reason) => fail(`github_app${key === "" ? "" : `.${key}`}`, reason), entry["webhook_secret_env"], fail);
  else if (entry["webhook_secret_env"] !== undefined) fail("webhook_secret_env", "goes with github_app");
  if (credential.kind === "none" && anonymousFetch !== true) fail("", "needs token_env, github_app, or anonymous_fetch: true");

  return { name, origin: url.origin, basePath: url.pathname.replace(/\/+$/, ""), credential, anonymousFetch: anonymousFetch === true };
}

async function parseApp(
  file: string,
  app: JsonValue,
  fail: (key: string, reason: string) => never,
  webhookSecretEnv: JsonValue | undefined,
  failHost: (key: string, reason: string) => never,
): Promise<GitHostCredential> {
  if (!isObject(app)) return fail("", "must be an object: { app_id, private_key_file, api_url }");
  for (const key of Object.keys(app)) if (!APP_FIELDS.has(key)) fail(key, `unknown field (expected ${[...APP_FIELDS].join(", ")})`);
  const appId = app["app_id"];
  if (!(typeof appId === "number" && Number.isSafeInteger(appId) && appId > 0) && !(typeof appId === "string" && /^\d{1,20}$/.test(appId))) {
    fail("app_id", "must be the App's numeric id");
  }
  const keyFile = app["private_key_file"];
  if (typeof keyFile !== "string" || keyFile === "") return fail("private_key_file", "is required: the App's private key (PEM)");
  const keyPath = path.resolve(path.dirname(file), keyFile);
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(await readFile(keyPath, "utf8"));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return fail("private_key_file", code === "ENOENT" || code === "EACCES" ? `cannot read ${keyPath} (${code})` : `${keyPath} is not a PEM private key`);
  }
  if (privateKey.asymmetricKeyType !== "rsa") fail("private_key_file", "must be an RSA key: GitHub signs App tokens with RS256");
  const apiUrl = app["api_url"] === undefined ? new URL("https://api.github.com") : configuredBaseUrl(app["api_url"], (reason) => fail("api_url", reason));
  if (webhookSecretEnv !== undefined && (typeof webhookSecretEnv !== "string" || !ENVIRONMENT_VARIABLE.test(webhookSecretEnv))) {
    failHost("webhook_secret_env", "must name the environment variable holding the webhook secret");
  }
  return {
    kind: "github_app",
    appId: String(appId),
    privateKey,
    apiUrl: apiUrl.href.replace(/\/+$/, ""),
    webhookSecretEnv: webhookSecretEnv as string | undefined,
  };
}

function isObject(value: JsonValue | undefined): value is Record<string, JsonValue> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
