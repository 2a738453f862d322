import { configuredBaseUrl } from "../../base-url.js";
import path from "node:path";
import { HoconError, parseHoconFile, type JsonValue } from "../../agents/hocon.js";

/** The methods a credential may allow; anything else (CONNECT, TRACE, OPTIONS) is never brokered. */
export const HTTP_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];

/** One server-side credential of `AXON_CREDENTIALS_FILE`. The secret itself is not here: it stays in the environment. */
export interface Credential {
  name: string;
  /** `scheme://host[:port]` of `base_url`. */
  origin: string;
  /** The path of `base_url` without its trailing slash (`""` for the root): every request path stays under it. */
  basePath: string;
  /** The header the secret is sent in, as configured. */
  header: string;
  /** Sent before the secret (`Bearer <secret>`); absent = the bare secret. */
  scheme: string | undefined;
  /** The environment variable holding the secret. */
  secretEnv: string;
  methods: readonly HttpMethod[];
  /**
   * The header in which the upstream takes an idempotency key (`Idempotency-Key`), if it honours one: every request
   * then carries a key of the operation's, and a request cut by a crash is sent again with it rather than left unknown.
   */
  idempotencyHeader?: string | undefined;
}

/** A broken credentials file: the server does not start with it. */
export class CredentialsFileError extends Error {
  override readonly name = "CredentialsFileError";
  constructor(
    readonly file: string,
    /** The offending key path (`github.base_url`), empty for the file as a whole. */
    readonly key: string,
    readonly reason: string,
  ) {
    super(`${file}${key === "" ? "" : ` at ${key}`}: ${reason}`);
  }
}

/** The configured credentials, by name. Secrets are read from the environment when a request is made. */
export class Credentials {
  private readonly byName: ReadonlyMap<string, Credential>;

  constructor(
    credentials: Iterable<Credential> = [],
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {
    this.byName = new Map([...credentials].map((credential) => [credential.name, credential]));
  }

  get(name: string): Credential | undefined {
    return this.byName.get(name);
  }

  names(): string[] {
    return [...this.byName.keys()];
  }

  /**
   * The secret, read now rather than at load: a missing variable then fails the operations that need it, with a code
   * the client can act on, instead of keeping the whole server from starting. Empty counts as missing.
   */
  secretOf(credential: Credential): string | undefined {
    const secret = this.env[credential.secretEnv];
    return secret === undefined || secret === "" ? undefined : secret;
  }
}

/**
 * Reads `AXON_CREDENTIALS_FILE` (HOCON or JSON): `{ "<name>": { base_url, header, scheme?, secret_env, methods,
 * idempotency_header? } }`.
 * No file configured = no credentials, so every `http.request` names an unknown credential. A file that is set but
 * missing or invalid throws CredentialsFileError naming the file and the key.
 */
export async function loadCredentials(
  file: string | undefined = undefined,
  env: NodeJS.ProcessEnv = process.env,
  options: { projectRoot?: string } = {},
): Promise<Credentials> {
  const configured = file ?? (env.AXON_CREDENTIALS_FILE || undefined);
  if (configured === undefined) return new Credentials([], env);
  const absoluteFile = path.resolve(configured);

  let value;
  try {
    ({ value } = await parseHoconFile(absoluteFile, options.projectRoot === undefined ? {} : { projectRoot: options.projectRoot }));
  } catch (error) {
    if (error instanceof HoconError) {
      throw new CredentialsFileError(error.file, "", error.line === undefined ? error.reason : `${error.reason} (line ${error.line})`);
    }
    throw error;
  }
  const credentials = Object.entries(value).map(([name, entry]) => parseCredential(absoluteFile, name, entry));
  return new Credentials(credentials, env);
}

const CREDENTIAL_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
/** RFC 9110 token: header field names and authentication schemes. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const ENVIRONMENT_VARIABLE = /^[A-Za-z_][A-Za-z0-9_]*$/;
const FIELDS = new Set(["base_url", "header", "scheme", "secret_env", "methods", "idempotency_header"]);
/** Headers the secret may not travel in: the transport owns them, or a client could not tell them from framing. */
const RESERVED_HEADERS = new Set([
  "host",
  "content-length",
  "content-type",
  "transfer-encoding",
  "connection",
  "keep-alive",
  "upgrade",
  "te",
  "trailer",
  "expect",
]);

function parseCredential(file: string, name: string, entry: JsonValue): Credential {
  const fail = (key: string, reason: string): never => {
    throw new CredentialsFileError(file, key === "" ? name : `${name}.${key}`, reason);
  };
  if (!CREDENTIAL_NAME.test(name)) {
    fail("", "a credential name is 1 to 64 letters, digits, dots, dashes or underscores, starting with a letter or digit");
  }
  if (entry === null || typeof entry !== "object" || Array.isArray(entry)) return fail("", "must be an object");
  for (const key of Object.keys(entry)) {
    if (!FIELDS.has(key)) fail(key, `unknown field (expected ${[...FIELDS].join(", ")})`);
  }

  const url = configuredBaseUrl(entry["base_url"], (reason) => fail("base_url", reason));

  const header = entry["header"];
  if (typeof header !== "string" || !TOKEN.test(header)) return fail("header", "is required: a valid HTTP header name");
  if (RESERVED_HEADERS.has(header.toLowerCase())) fail("header", `${header} is managed by the HTTP client and cannot carry a secret`);

  const scheme = entry["scheme"];
  if (scheme !== undefined && (typeof scheme !== "string" || !TOKEN.test(scheme))) {
    fail("scheme", "must be an authentication scheme such as Bearer (leave it out to send the bare secret)");
  }

  const secretEnv = entry["secret_env"];
  if (typeof secretEnv !== "string" || !ENVIRONMENT_VARIABLE.test(secretEnv)) {
    return fail("secret_env", "is required: the name of the environment variable holding the secret");
  }

  const methods = entry["methods"];
  if (!Array.isArray(methods) || methods.length === 0) return fail("methods", `is required: a non-empty list of ${HTTP_METHODS.join(", ")}`);
  const allowed: HttpMethod[] = [];
  for (const [index, method] of methods.entries()) {
    const upper = typeof method === "string" ? method.toUpperCase() : undefined;
    if (!isHttpMethod(upper)) return fail(`methods[${index}]`, `must be one of ${HTTP_METHODS.join(", ")}`);
    if (!allowed.includes(upper)) allowed.push(upper);
  }

  const idempotencyHeader = entry["idempotency_header"];
  if (idempotencyHeader !== undefined) {
    if (typeof idempotencyHeader !== "string" || !TOKEN.test(idempotencyHeader)) fail("idempotency_header", "must be a valid HTTP header name such as Idempotency-Key");
    else if (RESERVED_HEADERS.has(idempotencyHeader.toLowerCase())) fail("idempotency_header", `${idempotencyHeader} is managed by the HTTP client`);
    else if (idempotencyHeader.toLowerCase() === header.toLowerCase()) fail("idempotency_header", "must differ from the header carrying the secret");
  }

  return {
    name,
    origin: url.origin,
    basePath: url.pathname.replace(/\/+$/, ""),
    header,
    scheme: typeof scheme === "string" ? scheme : undefined,
    secretEnv,
    methods: allowed,
    idempotencyHeader: typeof idempotencyHeader === "string" ? idempotencyHeader : undefined,
  };
}

export function isHttpMethod(value: unknown): value is HttpMethod {
  return typeof value === "string" && (HTTP_METHODS as readonly string[]).includes(value);
}
