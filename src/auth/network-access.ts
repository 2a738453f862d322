import path from "node:path";
import { HoconError, parseHoconFile } from "../agents/hocon.js";
import { isJsonObject } from "../json.js";
import { globMatches } from "../operations/policy.js";
import { PRINCIPAL_NAME } from "./principals.js";

/** The principal of a call that names nobody (no bearer, no client certificate). */
export const ANONYMOUS = "anonymous";

/**
 * Which agent networks each principal may see (AXON_NETWORK_ACCESS_FILE): `{"finance-app": ["finance/*"],
 * "anonymous": ["hello_world"]}`. A pattern is a network name or a glob whose `*` matches any run of characters
 * (`/` included). A principal the file does not name sees nothing. Without a file every network is open to everyone,
 * as before the file existed.
 */
export class NetworkAccess {
  private constructor(
    /** Undefined: open to everyone. */
    private readonly patterns: ReadonlyMap<string, readonly string[]> | undefined,
    readonly source: string | undefined,
  ) {}

  static readonly open = new NetworkAccess(undefined, undefined);

  static fromDocument(document: unknown, source: string): NetworkAccess {
    const fail = (key: string | undefined, reason: string): never => {
      throw new NetworkAccessFileError(source, key, reason);
    };
    if (!isJsonObject(document)) return fail(undefined, "the top level must be an object of principal -> list of networks");
    const patterns = new Map<string, readonly string[]>();
    for (const [principal, list] of Object.entries(document)) {
      if (!PRINCIPAL_NAME.test(principal)) fail(principal, "is not a principal name (1 to 64 letters, digits, dots, underscores or dashes)");
      if (!Array.isArray(list)) return fail(principal, "must be a list of network names or globs");
      list.forEach((pattern, index) => {
        if (typeof pattern !== "string" || pattern === "") fail(`${principal}[${index}]`, "must be a non-empty string");
      });
      patterns.set(principal, list as string[]);
    }
    return new NetworkAccess(patterns, source);
  }

  get isOpen(): boolean {
    return this.patterns === undefined;
  }

  /** Whether `principal` (undefined: anonymous) may see and call `network`. */
  allows(principal: string | undefined, network: string): boolean {
    if (this.patterns === undefined) return true;
    const patterns = this.patterns.get(principal ?? ANONYMOUS);
    return patterns !== undefined && patterns.some((pattern) => globMatches(pattern, network));
  }
}

export class NetworkAccessFileError extends Error {
  override readonly name = "NetworkAccessFileError";
  constructor(file: string, key: string | undefined, reason: string, options: { cause?: unknown } = {}) {
    super(`network access file ${file}${key === undefined ? "" : ` at ${key}`}: ${reason}`, options);
  }
}

/** No file: open. Otherwise the file (HOCON or JSON), validated in full before the server starts. */
export async function loadNetworkAccess(file: string | undefined, options: { projectRoot?: string } = {}): Promise<NetworkAccess> {
  if (file === undefined) return NetworkAccess.open;
  const absoluteFile = path.resolve(file);
  try {
    const parsed = await parseHoconFile(absoluteFile, options.projectRoot === undefined ? {} : { projectRoot: options.projectRoot });
    return NetworkAccess.fromDocument(parsed.value, absoluteFile);
  } catch (error) {
    if (error instanceof HoconError) throw new NetworkAccessFileError(absoluteFile, undefined, error.message, { cause: error });
    throw error;
  }
}
