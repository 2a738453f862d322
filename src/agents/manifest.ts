import path from "node:path";

import { HoconError, parseHoconFile, type HoconOptions, type JsonValue } from "./hocon.js";
import { RegistryProblemsError, problemOfHoconError, type RegistryProblem } from "./problem.js";
import { isJsonObject } from "../json.js";

/**
 * One line of the manifest. The value is `true` (served and public, as neuro-san reads it), `false` (not served), or
 * `{serve, public}` where a missing `serve` or `public` means `true`.
 */
export interface ManifestEntry {
  /** The network's name: the file's stem. */
  name: string;
  /** The key as written in the manifest. */
  entry: string;
  /** Absolute path of the network file. */
  file: string;
  serve: boolean;
  public: boolean;
}

export interface Manifest {
  file: string;
  /** In manifest order; List keeps this order. */
  entries: ManifestEntry[];
  /** Bad entries, skipped; the rest of the manifest still counts. */
  problems: RegistryProblem[];
  /** The manifest and the files it included. */
  files: string[];
}

export const NETWORK_NAME = /^[A-Za-z0-9_-]+$/;

/** Throws RegistryProblemsError when the manifest itself cannot be read; bad entries only become problems. */
export async function readManifest(manifestFile: string, options: HoconOptions = {}): Promise<Manifest> {
  const file = path.resolve(manifestFile);
  let parsed;
  try {
    parsed = await parseHoconFile(file, options);
  } catch (error) {
    if (error instanceof HoconError) {
      throw new RegistryProblemsError([problemOfHoconError(error)]);
    }
    throw error;
  }

  const entries: ManifestEntry[] = [];
  const problems: RegistryProblem[] = [];
  const seen = new Map<string, string>();
  for (const [entry, value] of flattenEntries(parsed.value)) {
    const switches = servingSwitches(value);
    if (typeof switches === "string") {
      problems.push({ file, key: entry, reason: switches });
      continue;
    }
    const networkFile = path.resolve(path.dirname(file), entry);
    const name = path.basename(networkFile, path.extname(networkFile));
    if (!NETWORK_NAME.test(name)) {
      problems.push({ file, key: entry, reason: `network name ${JSON.stringify(name)} must match [A-Za-z0-9_-]+` });
      continue;
    }
    const earlier = seen.get(name);
    if (earlier !== undefined) {
      problems.push({ file, key: entry, reason: `network name ${name} is already taken by ${earlier}` });
      continue;
    }
    seen.set(name, entry);
    entries.push({ name, entry, file: networkFile, ...switches });
  }
  return { file, entries, problems, files: parsed.files };
}

/**
 * `"a.hocon": true` is the usual form, but an unquoted `a.hocon = true` is a HOCON path and arrives as
 * `{a: {hocon: true}}`: join such paths back into file names.
 */
function flattenEntries(value: Record<string, JsonValue>, prefix = ""): [string, JsonValue][] {
  const result: [string, JsonValue][] = [];
  for (const [key, child] of Object.entries(value)) {
    const entry = prefix === "" ? key : `${prefix}.${key}`;
    if (isJsonObject(child) && Object.keys(child).length > 0 && !isSwitchObject(child)) result.push(...flattenEntries(child, entry));
    else result.push([entry, child]);
  }
  return result;
}

function servingSwitches(value: JsonValue): { serve: boolean; public: boolean } | string {
  if (typeof value === "boolean") return { serve: value, public: value };
  if (isJsonObject(value) && isSwitchObject(value)) {
    const serve = value.serve ?? true;
    const isPublic = value.public ?? true;
    if (typeof serve !== "boolean" || typeof isPublic !== "boolean") return "serve and public must be true or false";
    return { serve, public: isPublic };
  }
  return "must be true, false or {serve, public}";
}

function isSwitchObject(value: Record<string, JsonValue>): boolean {
  const keys = Object.keys(value);
  return keys.length > 0 && keys.every((key) => key === "serve" || key === "public");
}
