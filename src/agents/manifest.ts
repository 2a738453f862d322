import { existsSync } from "node:fs";
import path from "node:path";

import { HoconError, parseHoconFile, type HoconOptions, type JsonObject, type JsonValue } from "./hocon.js";
import { RegistryProblemsError, problemOfHoconError, problemsOfMissingIncludes, type RegistryProblem } from "./problem.js";
import { isJsonObject } from "../json.js";
import { periodicOf, type PeriodicInteraction } from "./periodic.js";

/**
 * One line of the manifest. The value is `true` (served, public and an MCP tool), `false` (not served), or
 * `{serve, public, mcp, mcp_name, periodic}` where a missing `serve` or `public` means `true` and a missing `mcp`
 * follows `public`.
 */
export interface ManifestEntry {
  /** The manifest that says how it is served (the last of several that name it). */
  manifest: string;
  /** The network's name: the file's path relative to the manifest, without its extension (`industry/macys`). */
  name: string;
  /** The key as written in the manifest. */
  entry: string;
  /** Absolute path of the network file. */
  file: string;
  serve: boolean;
  public: boolean;
  /** Offered as a tool by Axon's MCP server; `mcp: true` implies `public`. */
  mcp: boolean;
  /** `mcp_name` (or `mcp.name`): the MCP tool name instead of the one derived from `name`; it turns `mcp` on. */
  mcpName?: string;
  /** `periodic`: the runs the server makes on a schedule, for a network whose front man's invocation is "event". */
  periodic: PeriodicInteraction[];
}

export interface Manifest {
  /** The manifest's path; for several read as one, their paths joined by `:`. */
  file: string;
  /** In manifest order; List keeps this order. */
  entries: ManifestEntry[];
  /** Bad entries, skipped, and warnings about served ones; the rest of the manifest still counts. */
  problems: RegistryProblem[];
  /** The manifest and the files it included. */
  files: string[];
}

const NETWORK_FILE = /\.(hocon|conf|json)$/i;
const SWITCHES = ["serve", "public", "mcp", "mcp_name", "periodic"];
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]/;

/**
 * `AGENT_MANIFEST_FILE` names one manifest, or several: neuro-san separates them with spaces, neuro-san-studio's image
 * joins them with `:`, and both are read.
 */
export function manifestFilesOf(value: string, root = process.cwd()): string[] {
  return value
    .split(/[:\s]+/)
    .filter((file) => file !== "")
    .map((file) => path.resolve(root, file));
}

/**
 * Several manifests read as one, in order, as neuro-san overlays them: a later manifest's entry for a network replaces
 * an earlier one's (where it was listed), `false` included, which stops serving it. A missing manifest among several
 * is a warning and adds nothing; a broken one throws, as a single manifest does.
 */
export async function readManifests(manifestFiles: readonly string[], options: HoconOptions = {}): Promise<Manifest> {
  const entries = new Map<string, ManifestEntry>();
  const problems: RegistryProblem[] = [];
  const files: string[] = [];
  for (const file of manifestFiles) {
    if (manifestFiles.length > 1 && !existsSync(file)) {
      problems.push({ file, reason: "manifest not found; the other manifests in AGENT_MANIFEST_FILE are served", severity: "warning" });
      files.push(file);
      continue;
    }
    const manifest = await readManifest(file, options);
    for (const entry of manifest.entries) entries.set(entry.name, entry);
    problems.push(...manifest.problems);
    files.push(...manifest.files);
  }
  return { file: manifestFiles.join(":"), entries: [...entries.values()], problems, files };
}

/** Throws RegistryProblemsError when the manifest itself cannot be read; bad entries only become problems. */
export async function readManifest(manifestFile: string, options: HoconOptions = {}): Promise<Manifest> {
  const file = path.resolve(manifestFile);
  let parsed;
  try {
    parsed = await parseHoconFile(file, options);
  } catch (error) {
    if (error instanceof HoconError) {
      throw new RegistryProblemsError([...problemsOfMissingIncludes(error.missingIncludes), problemOfHoconError(error)]);
    }
    throw error;
  }

  const entries: ManifestEntry[] = [];
  const problems: RegistryProblem[] = problemsOfMissingIncludes(parsed.missingIncludes);
  const seen = new Map<string, string>();
  for (const [entry, value] of flattenEntries(parsed.value)) {
    const switches = servingSwitches(value);
    if (typeof switches === "string") {
      problems.push({ file, key: entry, reason: switches });
      continue;
    }
    for (const warning of switches.warnings) problems.push({ file, key: entry, reason: warning, severity: "warning" });
    const name = networkNameOf(entry);
    const nameProblem = networkNameProblem(name);
    if (nameProblem !== undefined) {
      problems.push({ file, key: entry, reason: `network name ${JSON.stringify(name)} ${nameProblem}` });
      continue;
    }
    const earlier = seen.get(name);
    if (earlier !== undefined) {
      problems.push({ file, key: entry, reason: `network name ${name} is already taken by ${earlier}` });
      continue;
    }
    seen.set(name, entry);
    entries.push({
      manifest: file,
      name,
      entry,
      file: path.resolve(path.dirname(file), entry),
      serve: switches.serve,
      public: switches.public,
      mcp: switches.mcp,
      ...(switches.mcpName === undefined ? {} : { mcpName: switches.mcpName }),
      periodic: switches.periodic,
    });
  }
  return { file, entries, problems, files: parsed.files };
}

/** `industry/macys.hocon` -> `industry/macys`, as neuro-san names it and other networks refer to it (`/industry/macys`). */
function networkNameOf(entry: string): string {
  return entry.replace(/\\/g, "/").replace(NETWORK_FILE, "");
}

/** Any name neuro-san serves (spaces included), but one that stays inside the manifest's folder. */
export function networkNameProblem(name: string): string | undefined {
  if (name === "" || CONTROL_CHARACTERS.test(name)) return "must be a non-empty name without control characters";
  const segments = name.split("/");
  if (segments.some((segment) => segment === "" || segment === "." || segment === "..")) {
    return "must be a relative path without empty, . or .. parts";
  }
  return undefined;
}

/**
 * `"a.hocon": true` is the usual form, but an unquoted `a.hocon = true` is a HOCON path and arrives as
 * `{a: {hocon: true}}`: join such paths back into file names. A file name, or an object of switches, ends the path.
 */
function flattenEntries(value: JsonObject, prefix = ""): [string, JsonValue][] {
  const result: [string, JsonValue][] = [];
  for (const [key, child] of Object.entries(value)) {
    const entry = prefix === "" ? key : `${prefix}.${key}`;
    const isEntry = NETWORK_FILE.test(entry) || !isJsonObject(child) || Object.keys(child).length === 0 || hasSwitches(child);
    if (isEntry) result.push([entry, child]);
    else result.push(...flattenEntries(child, entry));
  }
  return result;
}

function hasSwitches(value: JsonObject): boolean {
  return Object.keys(value).some((key) => SWITCHES.includes(key));
}

interface ServingSwitches {
  serve: boolean;
  public: boolean;
  mcp: boolean;
  mcpName?: string;
  periodic: PeriodicInteraction[];
  warnings: string[];
}

function servingSwitches(value: JsonValue): ServingSwitches | string {
  if (typeof value === "boolean") return { serve: value, public: value, mcp: value, periodic: [], warnings: [] };
  if (!isJsonObject(value)) return "must be true, false or {serve, public, mcp}";
  const serve = value["serve"] ?? true;
  const listed = value["public"] ?? true;
  if (typeof serve !== "boolean" || typeof listed !== "boolean") return "serve and public must be true or false";
  const mcp = mcpSwitch(value["mcp"]);
  if (typeof mcp === "string") return mcp;
  const mcpName = value["mcp_name"] ?? (isJsonObject(value["mcp"]) ? value["mcp"]["name"] : undefined);
  if (mcpName !== undefined && (typeof mcpName !== "string" || mcpName === "")) return "mcp_name must be a non-empty string";
  const warnings = Object.keys(value)
    .filter((key) => !SWITCHES.includes(key))
    .map((key) => `${key} is not a manifest key; ignored`);
  const periodic = periodicOf(value["periodic"]);
  warnings.push(...periodic.warnings);
  // A tool nobody may list would be pointless: mcp implies public. Naming the tool asks for it, unless mcp says no.
  const offered = mcp ?? (mcpName !== undefined || listed);
  return { serve, public: listed || offered, mcp: offered, ...(mcpName === undefined ? {} : { mcpName }), periodic: periodic.interactions, warnings };
}

/** neuro-san's `mcp` is a boolean or `{enable, name}` (writing the object turns it on). */
function mcpSwitch(value: JsonValue | undefined): boolean | undefined | string {
  if (value === undefined || typeof value === "boolean") return value;
  if (isJsonObject(value)) {
    const enable = value["enable"] ?? true;
    return typeof enable === "boolean" ? enable : "mcp.enable must be true or false";
  }
  return "mcp must be true, false or {enable}";
}
