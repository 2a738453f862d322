import { stat } from "node:fs/promises";
import path from "node:path";

import { agentNotFound } from "../errors.js";
import type { Logger } from "../logger.js";
import { pythonImportRoots } from "./coded-tool-location.js";
import { codedToolProblems } from "./coded-tool-problems.js";
import { middlewareProblems } from "./middleware/middleware-problems.js";
import { connectivityOf, functionOf, listingOf, type AgentListing, type ConnectivityEntry } from "./connectivity.js";
import { EMPTY_LLM_INFO, readLlmInfo, type LlmInfo } from "../llm/llm-info.js";
import { HoconError, parseHoconFile, type Environment, type HoconOptions, type JsonObject } from "./hocon.js";
import { llmConfigProblems } from "./llm-config-problems.js";
import { loadInfoFile, locateNamedFile, type LoadedInfo } from "./info-files.js";
import { manifestFilesOf, readManifests, type ManifestEntry } from "./manifest.js";
import type { PeriodicInteraction } from "./periodic.js";
import { isJsonObject } from "../json.js";
import { readMcpInfo, type McpInfo, type McpServerInfo } from "./mcp-client/mcp-info.js";
import { nameMcpTools } from "./mcp-tool-names.js";
import type { AgentFunction, AgentNetwork } from "./agent-network.js";
import { buildNetwork } from "./network.js";
import { RegistryProblemsError, describeProblem, problemOfHoconError, problemsOfMissingIncludes, type RegistryProblem } from "./problem.js";
import { PythonLoadCheck } from "./python/python-check.js";
import { buildTemporaryNetwork, isReservationName, type TemporaryNetworkSpec } from "./temporary-networks.js";
import { safeToolName } from "./tool-names.js";
import { DEFAULT_TOOLBOX } from "./toolbox/default-toolbox.js";
import { readToolboxInfo, type Toolbox } from "./toolbox/toolbox-info.js";

export interface AgentRegistryOptions {
  /** `AGENT_MANIFEST_FILE`: one manifest, or several separated by `:`; network paths in each are relative to it. */
  manifestFile: string;
  /** The working directory: where `include "registries/x.hocon"` is looked for last (after `checkoutRootOf`). */
  projectRoot: string;
  logger?: Logger;
  /** What `${NAME}` in network files reads when the file does not define NAME (the server's environment). */
  environment?: Environment;
  /** `AGENT_TOOL_PATH`: where coded tools are looked for, to report at load the ones that will fail. */
  toolPath?: string;
  /**
   * `AXON_PYTHON`: compiles the Python coded tools at load, and looks for the modules of library tools run in Python, to
   * report what will fail; without it they are not checked.
   */
  python?: string;
  /** `AGENT_TOOLBOX_INFO_FILE`: extends the default toolbox for every network. */
  toolboxInfoFile?: string;
  /** `AGENT_MCP_INFO_FILE`: headers (and allowed tools) per MCP server URL. */
  mcpInfoFile?: string;
  /** `AGENT_LLM_INFO_FILE`: model names and classes for every network; a network's `llm_info_file` extends it. */
  llmInfoFile?: string;
  /** What temporary networks' expiry is judged by; the system clock by default. */
  clock?: { now(): Date };
  /**
   * Asked before a name shaped like a reserved one is answered as not served: a temporary network another replica
   * just created may not have reached this one yet. It resolves once `setTemporaryNetworks` has the latest set.
   */
  refreshTemporaryNetworks?: () => Promise<void>;
}

/** One consistent view of the served networks; a reload builds a new one and swaps it in whole. */
interface Snapshot {
  /** Served networks in manifest order. */
  networks: ReadonlyMap<string, AgentNetwork>;
  problems: readonly RegistryProblem[];
  mcpInfo: McpInfo;
  /** Each served network's LLM info: the server's file, extended by the network's own. */
  llmInfos: ReadonlyMap<string, LlmInfo>;
  /** Network name -> its MCP tool name, for the networks offered over MCP. */
  mcpToolNames: ReadonlyMap<string, string>;
  /** Every file the snapshot was read from, with what it looked like then. */
  fingerprints: ReadonlyMap<string, string>;
  /** The server's toolbox and LLM info: what temporary networks are built against. */
  toolbox: Toolbox;
  llmInfo: LlmInfo;
  /** Network name -> the runs its manifest entry schedules (`periodic`), for the networks invoked by events. */
  periodic: ReadonlyMap<string, readonly PeriodicInteraction[]>;
}

const EMPTY: Snapshot = {
  networks: new Map(),
  problems: [],
  mcpInfo: new Map(),
  llmInfos: new Map(),
  mcpToolNames: new Map(),
  fingerprints: new Map(),
  toolbox: DEFAULT_TOOLBOX,
  llmInfo: EMPTY_LLM_INFO,
  periodic: new Map(),
};

/** A temporary network as served: built once, until it expires (epoch milliseconds). */
interface ServedTemporary {
  network: AgentNetwork;
  expiresAt: number;
}

/** What is served now: the snapshot's networks, then the temporary ones that have not expired, until `until`. */
interface View {
  snapshot: Snapshot;
  temporary: ReadonlyMap<string, ServedTemporary>;
  networks: ReadonlyMap<string, AgentNetwork>;
  mcpToolNames: ReadonlyMap<string, string>;
  /** When the next temporary network expires (epoch milliseconds): the view is made again then. */
  until: number;
}

/**
 * A network offered as an MCP tool, under the name neuro-san would give it. Its description is the front man's function
 * description, as neuro-san describes the tool (the network's metadata description when the front man has none).
 */
export interface McpListing extends AgentListing {
  toolName: string;
}

/** Info files named by networks (`toolbox_info_file`, `llm_info_file`), each read once per reload. */
type NetworkInfoFiles = Map<string, Promise<LoadedInfo<unknown>>>;

/**
 * The agent networks this server serves, read from the manifest once and kept in memory. A broken network file is a
 * problem (reported, logged) that takes no other network down; a broken manifest on reload keeps the previous set.
 */
export class AgentRegistry {
  private snapshot: Snapshot = EMPTY;
  private temporary: ReadonlyMap<string, ServedTemporary> = new Map();
  private served: View | undefined;
  private readonly clock: { now(): Date };
  private reloads: Promise<unknown> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private checking = false;
  private readonly connectivityCache = new WeakMap<AgentNetwork, ConnectivityEntry[]>();
  private readonly listings = new WeakMap<View, readonly AgentListing[]>();
  private readonly manifestFiles: string[];
  private readonly hoconOptions: HoconOptions;
  private readonly pythonImportRoots: string[];
  private readonly pythonCheck: PythonLoadCheck | undefined;

  /** Serves nothing until its first `reload`; `AgentRegistry.load` does both. */
  constructor(private readonly options: AgentRegistryOptions) {
    this.manifestFiles = manifestFilesOf(options.manifestFile);
    this.clock = options.clock ?? { now: () => new Date() };
    this.hoconOptions = {
      includeRoots: [...new Set(this.manifestFiles.map(checkoutRootOf))],
      projectRoot: path.resolve(options.projectRoot),
      ...(options.environment === undefined ? {} : { environment: options.environment }),
    };
    const { python, toolPath, projectRoot } = options;
    this.pythonImportRoots = toolPath === undefined ? [] : pythonImportRoots(toolPath, projectRoot);
    this.pythonCheck = python === undefined || toolPath === undefined ? undefined : new PythonLoadCheck(python, this.pythonImportRoots);
  }

  /** Throws RegistryProblemsError when the manifest cannot be read: there is nothing to serve. */
  static async load(options: AgentRegistryOptions): Promise<AgentRegistry> {
    const registry = new AgentRegistry(options);
    await registry.reload({ throwOnBrokenManifest: true });
    return registry;
  }

  get(name: string): AgentNetwork | undefined {
    return this.view().networks.get(name);
  }

  /** Private networks too: they are callable, only unlisted. */
  require(name: string): AgentNetwork {
    const network = this.get(name);
    if (network === undefined) throw agentNotFound(name);
    return network;
  }

  /**
   * `get`, after catching up with the temporary networks when the name is shaped like a reserved one and not served
   * here yet: for the ways in that can wait a moment (a chat, Function, Connectivity, an operation).
   */
  async find(name: string): Promise<AgentNetwork | undefined> {
    const network = this.get(name);
    const refresh = this.options.refreshTemporaryNetworks;
    if (network !== undefined || refresh === undefined || !isReservationName(name)) return network;
    await refresh();
    return this.get(name);
  }

  /** `find`, throwing NOT_FOUND for a network not served. */
  async resolve(name: string): Promise<AgentNetwork> {
    const network = await this.find(name);
    if (network === undefined) throw agentNotFound(name);
    return network;
  }

  /** Every served network, public or not: the manifest's in its order, then the temporary ones. */
  networks(): AgentNetwork[] {
    return [...this.view().networks.values()];
  }

  /** What List answers: public networks in that order; the same array until the networks change. */
  listPublic(): readonly AgentListing[] {
    const view = this.view();
    let listings = this.listings.get(view);
    if (listings === undefined) {
      listings = Object.freeze([...view.networks.values()].filter((network) => network.public).map(listingOf));
      this.listings.set(view, listings);
    }
    return listings;
  }

  /**
   * The networks Axon's MCP server offers as tools, in manifest order: public ones unless the manifest says
   * `mcp: false`, less those whose tool name another network holds.
   */
  listMcp(): McpListing[] {
    const { mcpToolNames } = this.view();
    return this.networks().flatMap((network) => {
      const toolName = mcpToolNames.get(network.name);
      if (toolName === undefined) return [];
      const listing = listingOf(network);
      return [{ ...listing, description: functionOf(network).description || listing.description, toolName }];
    });
  }

  /**
   * Serves these temporary networks from now on, in place of the previous set: each built once (as a network file is,
   * against the server's toolbox and LLM info), each until it expires. One that cannot be built is left out and
   * logged; `checkTemporaryNetwork` refuses such a spec before it is stored.
   */
  setTemporaryNetworks(specs: readonly TemporaryNetworkSpec[]): void {
    const temporary = new Map<string, ServedTemporary>();
    for (const spec of specs) {
      const expiresAt = spec.expiresAt.getTime();
      const known = this.temporary.get(spec.name);
      if (known !== undefined && known.expiresAt === expiresAt) {
        temporary.set(spec.name, known);
        continue;
      }
      try {
        temporary.set(spec.name, { network: buildTemporaryNetwork(spec, this.snapshot.toolbox, this.snapshot.llmInfo), expiresAt });
      } catch (error) {
        if (!(error instanceof RegistryProblemsError)) throw error;
        this.log(error.problems, "temporary network not served");
      }
    }
    this.temporary = temporary;
  }

  /** The runs manifests schedule (`periodic`), by network, for the served networks their front man lets events invoke. */
  periodicRuns(): { network: string; interactions: readonly PeriodicInteraction[] }[] {
    return [...this.snapshot.periodic].map(([network, interactions]) => ({ network, interactions }));
  }

  /** What would keep a temporary network from being served (thrown as RegistryProblemsError), else its warnings. */
  checkTemporaryNetwork(spec: Omit<TemporaryNetworkSpec, "expiresAt">): RegistryProblem[] {
    return buildTemporaryNetwork(spec, this.snapshot.toolbox, this.snapshot.llmInfo).warnings;
  }

  /** The model names and classes a served network's llm_configs resolve against. */
  llmInfo(name: string): LlmInfo {
    const { snapshot } = this;
    return snapshot.llmInfos.get(name) ?? (this.temporary.has(name) ? snapshot.llmInfo : EMPTY_LLM_INFO);
  }

  /** How to reach an MCP server a network uses, from AGENT_MCP_INFO_FILE. */
  mcpServer(url: string): McpServerInfo | undefined {
    return this.snapshot.mcpInfo.get(url);
  }

  /** Computed once per served network; each call gets its own copy. */
  connectivity(name: string): ConnectivityEntry[] {
    const network = this.require(name);
    let entries = this.connectivityCache.get(network);
    if (entries === undefined) {
      entries = connectivityOf(network);
      this.connectivityCache.set(network, entries);
    }
    return entries.map((entry) => ({ ...entry, tools: [...entry.tools] }));
  }

  function(name: string): AgentFunction {
    return functionOf(this.require(name));
  }

  /** What went wrong in the last reload: the manifest's problems, or each broken entry and network file. */
  get problems(): readonly RegistryProblem[] {
    return this.snapshot.problems;
  }

  /**
   * Re-reads the manifest and every served file, then swaps the new set in at once. Reloads run one at a time.
   * A network file that fails keeps its previously loaded version (if any) serving; a manifest that fails keeps the
   * whole previous set.
   */
  reload(options: { throwOnBrokenManifest?: boolean } = {}): Promise<readonly RegistryProblem[]> {
    const run = this.reloads.then(() => this.reloadNow(options.throwOnBrokenManifest ?? false));
    this.reloads = run.catch(() => undefined);
    return run;
  }

  /** Reloads when any file the current set was read from changed, appeared or disappeared. */
  async reloadIfChanged(): Promise<boolean> {
    if (!(await this.filesChanged())) return false;
    await this.reload();
    return true;
  }

  /** Hot reload (`AGENT_MANIFEST_UPDATE_PERIOD_SECONDS`); 0 or less turns it off. The timer never keeps the process up. */
  watch(periodSeconds: number): void {
    this.close();
    if (!(periodSeconds > 0)) return;
    this.timer = setInterval(() => void this.checkForChanges(), periodSeconds * 1000);
    this.timer.unref();
  }

  close(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * The networks served now. Made again when the snapshot or the temporary set changes, or a temporary network
   * expires; with no temporary networks, never on account of the clock.
   */
  private view(): View {
    const { snapshot, temporary } = this;
    const served = this.served;
    if (served !== undefined && served.snapshot === snapshot && served.temporary === temporary && (served.until === Infinity || this.clock.now().getTime() < served.until)) {
      return served;
    }
    const now = temporary.size === 0 ? 0 : this.clock.now().getTime();
    const networks = new Map(snapshot.networks);
    const mcpToolNames = new Map(snapshot.mcpToolNames);
    const toolNamesTaken = new Set(mcpToolNames.values());
    let until = Infinity;
    for (const [name, { network, expiresAt }] of temporary) {
      // The manifest's network of the same name wins: a reserved name never takes one over.
      if (expiresAt <= now || networks.has(name)) continue;
      networks.set(name, network);
      until = Math.min(until, expiresAt);
      const toolName = safeToolName(name);
      if (network.public && !toolNamesTaken.has(toolName)) {
        mcpToolNames.set(name, toolName);
        toolNamesTaken.add(toolName);
      }
    }
    return (this.served = { snapshot, temporary, networks, mcpToolNames, until });
  }

  private async checkForChanges(): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    try {
      await this.reloadIfChanged();
    } catch (error) {
      this.options.logger?.error({ err: error }, "agent registry hot reload failed");
    } finally {
      this.checking = false;
    }
  }

  private async filesChanged(): Promise<boolean> {
    for (const [file, fingerprint] of this.snapshot.fingerprints) {
      if ((await fingerprintOf(file)) !== fingerprint) return true;
    }
    return false;
  }

  private async reloadNow(throwOnBrokenManifest: boolean): Promise<readonly RegistryProblem[]> {
    const previous = this.snapshot;
    let manifest;
    try {
      manifest = await readManifests(this.manifestFiles, this.hoconOptions);
    } catch (error) {
      if (!(error instanceof RegistryProblemsError) || throwOnBrokenManifest) throw error;
      this.log(error.problems, "agent manifest problem; still serving the previous networks");
      // Watch the same files as they are now, so only the next edit (not this one again) triggers a reload.
      const fingerprints = await fingerprintsOf([...previous.fingerprints.keys(), ...this.manifestFiles]);
      this.snapshot = { ...previous, problems: error.problems, fingerprints };
      return error.problems;
    }

    const { toolboxInfoFile, mcpInfoFile, llmInfoFile } = this.options;
    const [toolbox, mcpInfo, llmInfo] = await Promise.all([
      loadInfoFile(toolboxInfoFile, this.hoconOptions, (raw, file) => readToolboxInfo(raw, file, DEFAULT_TOOLBOX), DEFAULT_TOOLBOX),
      loadInfoFile(mcpInfoFile, this.hoconOptions, readMcpInfo, new Map() as McpInfo),
      loadInfoFile(llmInfoFile, this.hoconOptions, (raw, file) => readLlmInfoFile(raw, file, EMPTY_LLM_INFO), EMPTY_LLM_INFO),
    ]);
    const served = manifest.entries.filter((entry) => entry.serve);
    const networkInfoFiles: NetworkInfoFiles = new Map();
    const loads = await Promise.all(served.map((entry) => this.loadNetwork(entry, toolbox.value, llmInfo.value, networkInfoFiles)));

    const networks = new Map<string, AgentNetwork>();
    const llmInfos = new Map<string, LlmInfo>();
    const problems: RegistryProblem[] = [...manifest.problems, ...toolbox.problems, ...mcpInfo.problems, ...llmInfo.problems];
    const files = new Set([...manifest.files, ...toolbox.files, ...mcpInfo.files, ...llmInfo.files]);
    // An info file several networks share is reported once.
    for (const loaded of await Promise.all(networkInfoFiles.values())) {
      problems.push(...loaded.problems);
      for (const file of loaded.files) files.add(file);
    }
    served.forEach((entry, index) => {
      const loaded = loads[index];
      if (loaded === undefined) return;
      for (const file of loaded.files) files.add(file);
      problems.push(...loaded.problems);
      if (loaded.network !== undefined) {
        networks.set(entry.name, loaded.network);
        llmInfos.set(entry.name, loaded.llmInfo);
        return;
      }
      const stale = previous.networks.get(entry.name);
      if (stale !== undefined && stale.file === entry.file) {
        const unchanged = stale.public === entry.public && stale.mcp === entry.mcp;
        networks.set(entry.name, unchanged ? stale : Object.freeze({ ...stale, public: entry.public, mcp: entry.mcp }));
        llmInfos.set(entry.name, previous.llmInfos.get(entry.name) ?? EMPTY_LLM_INFO);
        problems.push({ file: entry.file, reason: `still serving the version of ${entry.name} loaded before` });
      }
    });

    const periodic = new Map<string, readonly PeriodicInteraction[]>();
    for (const entry of served) {
      const network = networks.get(entry.name);
      if (network === undefined || entry.periodic.length === 0) continue;
      if (invokedByEvents(network)) periodic.set(entry.name, entry.periodic);
      else {
        problems.push({
          file: entry.manifest,
          key: entry.entry,
          reason: `periodic is ignored: the front man of ${entry.name} is not invoked by events (its function.invocation is not "event")`,
          severity: "warning",
        });
      }
    }

    const offered = served.filter((entry) => entry.mcp && networks.has(entry.name));
    const publicNetworks = new Set([...networks.values()].filter((network) => network.public).map((network) => network.name));
    const mcpNaming = nameMcpTools(
      offered.map((entry) => ({ name: entry.name, manifestFile: entry.manifest, ...(entry.mcpName === undefined ? {} : { mcpName: entry.mcpName }) })),
      publicNetworks,
    );
    problems.push(...mcpNaming.problems);
    const mcpToolNames = new Map([...mcpNaming.tools].map(([toolName, network]) => [network, toolName]));

    this.snapshot = {
      networks,
      problems,
      mcpInfo: mcpInfo.value,
      llmInfos,
      mcpToolNames,
      fingerprints: await fingerprintsOf(files),
      toolbox: toolbox.value,
      llmInfo: llmInfo.value,
      periodic,
    };
    this.log(problems, "agent network problem");
    this.options.logger?.info(
      { manifest: manifest.file, networks: [...networks.keys()], problems: problems.length },
      "agent networks loaded",
    );
    return problems;
  }

  /** A served network comes with its warnings and LLM info; a failed one with its problems. */
  private async loadNetwork(
    entry: ManifestEntry,
    serverToolbox: Toolbox,
    serverLlmInfo: LlmInfo,
    networkInfoFiles: NetworkInfoFiles,
  ): Promise<{ network?: AgentNetwork; llmInfo: LlmInfo; problems: RegistryProblem[]; files: string[] }> {
    let parsed;
    try {
      parsed = await parseHoconFile(entry.file, this.hoconOptions);
    } catch (error) {
      if (!(error instanceof HoconError)) throw error;
      return { llmInfo: serverLlmInfo, problems: [...problemsOfMissingIncludes(error.missingIncludes), problemOfHoconError(error)], files: error.files };
    }
    const warnings = problemsOfMissingIncludes(parsed.missingIncludes);
    const named = (key: string) => ({ entry, key, name: parsed.value[key], networkInfoFiles, warnings });
    const [toolbox, llmInfo] = await Promise.all([
      this.networkInfoFile(named("toolbox_info_file"), serverToolbox, (raw, file) => readToolboxInfo(raw, file, serverToolbox)),
      this.networkInfoFile(named("llm_info_file"), serverLlmInfo, (raw, file) => readLlmInfoFile(raw, file, serverLlmInfo)),
    ]);
    try {
      const network = buildNetwork({ name: entry.name, file: entry.file, public: entry.public, mcp: entry.mcp, raw: parsed.value, toolbox });
      const llmProblems = llmConfigProblems(network, llmInfo);
      if (llmProblems.length > 0) return { llmInfo, problems: [...warnings, ...network.warnings, ...llmProblems], files: parsed.files };
      const refusedMiddleware = await middlewareProblems(network, this.pythonCheck);
      if (refusedMiddleware.length > 0) return { llmInfo, problems: [...warnings, ...network.warnings, ...refusedMiddleware], files: parsed.files };
      const { toolPath } = this.options;
      const codedTools =
        toolPath === undefined ? { problems: [], files: [] } : await codedToolProblems(network, path.resolve(toolPath), this.pythonImportRoots, this.pythonCheck);
      return { network, llmInfo, problems: [...warnings, ...network.warnings, ...codedTools.problems], files: [...parsed.files, ...codedTools.files] };
    } catch (error) {
      if (!(error instanceof RegistryProblemsError)) throw error;
      return { llmInfo, problems: [...warnings, ...error.problems], files: parsed.files };
    }
  }

  /** The server's info (toolbox, LLM info), extended by the file the network names under `key` when it names one. */
  private async networkInfoFile<T>(
    { entry, key, name, networkInfoFiles, warnings }: { entry: ManifestEntry; key: string; name: unknown; networkInfoFiles: NetworkInfoFiles; warnings: RegistryProblem[] },
    serverValue: T,
    read: (raw: JsonObject, file: string) => { value: T; problems: RegistryProblem[] },
  ): Promise<T> {
    if (typeof name !== "string") return serverValue;
    const { includeRoots = [], projectRoot } = this.hoconOptions;
    const located = locateNamedFile(name, [path.dirname(entry.file), ...includeRoots, ...(projectRoot === undefined ? [] : [projectRoot])]);
    if ("tried" in located) {
      warnings.push({
        file: entry.file,
        key,
        reason: `${name} was not found; looked for ${located.tried.join(", ")}`,
        severity: "warning",
      });
      return serverValue;
    }
    // One file per kind: a network's toolbox file is never read as another's LLM info.
    const cacheKey = `${key}\0${located.file}`;
    let loading = networkInfoFiles.get(cacheKey) as Promise<LoadedInfo<T>> | undefined;
    if (loading === undefined) {
      loading = loadInfoFile(located.file, this.hoconOptions, read, serverValue);
      networkInfoFiles.set(cacheKey, loading);
    }
    return (await loading).value;
  }

  private log(problems: readonly RegistryProblem[], message: string): void {
    for (const problem of problems) {
      this.options.logger?.warn({ ...problem, problem: describeProblem(problem) }, problem.severity === "warning" ? "agent network warning" : message);
    }
  }
}

/** neuro-san runs `periodic` schedules only for a network whose front man is invoked by events. */
function invokedByEvents(network: AgentNetwork): boolean {
  const fn = network.frontMan.raw["function"];
  return isJsonObject(fn) && fn["invocation"] === "event";
}

/** An LLM info file's problems are warnings: a bad entry is skipped, the rest of the file still counts. */
function readLlmInfoFile(raw: JsonObject, file: string, extending: LlmInfo): { value: LlmInfo; problems: RegistryProblem[] } {
  const { value, problems } = readLlmInfo(raw, extending);
  return { value, problems: problems.map(({ key, reason }) => ({ file, key, reason, severity: "warning" as const })) };
}

/**
 * The checkout a manifest belongs to, where its `include "registries/..."` lines point: the folder holding its
 * `registries` folder (neuro-san-studio's layout), else the manifest's own folder. Includes are looked for there
 * before the working directory, so a studio checkout loads from wherever the server runs.
 */
export function checkoutRootOf(manifestFile: string): string {
  const folders = path.dirname(manifestFile).split(path.sep);
  const registries = folders.lastIndexOf("registries");
  return registries > 0 ? folders.slice(0, registries).join(path.sep) || path.sep : path.dirname(manifestFile);
}

async function fingerprintsOf(files: Iterable<string>): Promise<Map<string, string>> {
  return new Map(await Promise.all([...new Set(files)].map(async (file) => [file, await fingerprintOf(file)] as const)));
}

/** Modification time, size and inode: cheap, and a rewrite of a file changes at least one of them in practice. */
async function fingerprintOf(file: string): Promise<string> {
  try {
    const info = await stat(file);
    return `${info.mtimeMs}:${info.size}:${info.ino}`;
  } catch {
    return "missing";
  }
}
