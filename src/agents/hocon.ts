import { existsSync, realpathSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

/**
 * HOCON files -> plain JSON, through @pushcorn/hocon-parser (pinned 1.3.1: this adapter leans on its internals).
 *
 * Network files are untrusted input, so everything in the library that executes code, fetches or leaks is switched off
 * process-wide the first time this module loads: value transforms (`| eval`, `| filter`, ...), script (`.js`) includes,
 * http/https/classpath includes, `{expression}` filters in substitution and key paths (they are compiled with
 * `new Function`), and the library's own reading of process.env. File includes may not leave the including network's
 * folder or the include roots.
 */

export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;
export interface JsonObject {
  [key: string]: JsonValue;
}

export type Environment = Readonly<Record<string, string | undefined>>;

export interface HoconOptions {
  /** Where an `include` is looked for when it is not next to the including file (real networks write `include "registries/aaosa.hocon"`). */
  projectRoot?: string;
  /** More such folders, looked in before the project root (a checkout the manifest lives in). */
  includeRoots?: string[];
  /** What `${NAME}` and `${?NAME}` read when the file does not define NAME, as pyhocon reads the environment. None when absent. */
  environment?: Environment;
}

/** An include that was found nowhere: HOCON skips it, but what it was meant to define is usually missed later. */
export interface MissingInclude {
  include: string;
  /** The including file. */
  from: string;
  /** Every path it was looked for at, in order. */
  tried: string[];
}

export interface ParsedHocon {
  value: JsonObject;
  /** The file and every file it included or looked for, absolute: what a hot reload has to watch. */
  files: string[];
  missingIncludes: MissingInclude[];
}

export class HoconError extends Error {
  override readonly name = "HoconError";
  constructor(
    readonly file: string,
    readonly reason: string,
    readonly line?: number,
    readonly column?: number,
    /** Files read before the failure (the file itself first): a hot reload retries when one changes. */
    readonly files: string[] = [file],
    /** Includes found nowhere before the failure: often its cause (an unresolved substitution). */
    readonly missingIncludes: MissingInclude[] = [],
  ) {
    super(`${file}${line === undefined ? "" : `:${line}${column === undefined ? "" : `:${column}`}`}: ${reason}`);
  }
}

export async function parseHoconFile(file: string, options: HoconOptions = {}): Promise<ParsedHocon> {
  const absoluteFile = path.resolve(file);
  if (!existsSync(absoluteFile)) throw new HoconError(absoluteFile, "file not found");

  const includeRoots = [...(options.includeRoots ?? []), ...(options.projectRoot === undefined ? [] : [options.projectRoot])].map(
    (root) => path.resolve(root),
  );
  const settings: ParseSettings = {
    includeRoots,
    allowedRoots: [path.dirname(absoluteFile), ...includeRoots].map(realPathOf),
    environment: options.environment,
    files: new Set([absoluteFile]),
    missingIncludes: new Map(),
  };
  // Strict mode: no `:=`, no `@` include shorthand, `.5` stays a string (hardenLibrary keeps `0.5` a number).
  const context = new library.Context({ url: absoluteFile, strict: true, required: true, env: false });
  settingsByRootContext.set(context, settings);

  let resolved: unknown;
  try {
    resolved = await context.resolve();
  } catch (error) {
    throw toHoconError(error, absoluteFile, [...settings.files], [...settings.missingIncludes.values()]);
  }
  if (resolved === undefined || resolved === null) resolved = {};
  if (!isPlainObject(resolved)) throw new HoconError(absoluteFile, "the top level must be an object");
  return { value: toJsonObject(resolved, absoluteFile, ""), files: [...settings.files], missingIncludes: [...settings.missingIncludes.values()] };
}

// ---------------------------------------------------------------------------------------------------------------
// The library, typed as far as this adapter uses it.

interface LibraryUrl {
  href: string;
}
interface LibraryContext {
  readonly root: LibraryContext;
  readonly url: LibraryUrl | null;
  isPathAbsolute(candidate: string): boolean;
  resolve(): Promise<unknown>;
}
interface LibraryContextClass {
  new (options: Record<string, unknown>): LibraryContext;
  prototype: LibraryContext;
  defaultBuilderMap: Record<string, string>;
  parseData(data: unknown, strict: boolean): unknown;
  registerComponent(...classes: AdapterClass[]): void;
}
type AdapterClass = abstract new (context: LibraryContext, options: unknown) => object;
interface SourceInstance {
  readonly context: LibraryContext;
  readonly notFound: symbol;
  appendPath(includePath: string): string;
  onLoadFile(): Promise<unknown>;
}
type SourceClass = new (context: LibraryContext, options: unknown) => SourceInstance;
interface Library {
  Context: LibraryContextClass;
  SourceAdapter: AdapterClass;
  BuilderAdapter: AdapterClass;
  TransformAdapter: AdapterClass;
}

const requireFromHere = createRequire(import.meta.url);
const library = requireFromHere("@pushcorn/hocon-parser") as Library;
const { FileSource: LibraryFileSource } = requireFromHere("@pushcorn/hocon-parser/lib/sources/FileSource.js") as {
  FileSource: SourceClass;
};
const libraryUtils = requireFromHere("@pushcorn/hocon-parser/lib/utils.js") as {
  query: { FILTER_OPEN: string; FILTER_CLOSE: string };
};
interface SubstitutionInstance {
  readonly context: LibraryContext;
  onResolveKey(scope: unknown): Promise<unknown>;
  onResolveFailure(scope: unknown): Promise<unknown>;
}
const { SubstitutionNode } = requireFromHere("@pushcorn/hocon-parser/lib/nodes/SubstitutionNode.js") as {
  SubstitutionNode: { prototype: SubstitutionInstance };
};

interface ParseSettings {
  includeRoots: string[];
  allowedRoots: string[];
  environment: Environment | undefined;
  files: Set<string>;
  /** By include and including file. */
  missingIncludes: Map<string, MissingInclude>;
}

/** One parse = one root context; included files' contexts find the settings through `context.root`. */
const settingsByRootContext = new WeakMap<LibraryContext, ParseSettings>();

const HOCON_EXTENSIONS = ["", ".hocon", ".conf", ".json", ".properties"];
const JSON_NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

hardenLibrary();

function hardenLibrary(): void {
  const { Context, SourceAdapter, BuilderAdapter, TransformAdapter } = library;

  // Without this the library hands `.hocon` files back as text.
  Context.defaultBuilderMap.hocon = "config";

  // The library compiles `{...}` path segments (in keys and substitutions) with `new Function`; a marker no single
  // character can equal switches that off.
  libraryUtils.query.FILTER_OPEN = "\u0000filters-disabled";
  libraryUtils.query.FILTER_CLOSE = "\u0000filters-disabled";

  // Strict mode reads `0.5` as a string; HOCON (and every real network's temperature) wants JSON numbers.
  const libraryParseData = Context.parseData.bind(Context);
  Context.parseData = (data, strict) => {
    if (strict && typeof data === "string" && JSON_NUMBER.test(data.trim())) return Number(data.trim());
    return libraryParseData(data, strict);
  };

  // The library would read process.env, and `include "env(file)"` turns that on per include: never. A parse reads
  // the environment it was given instead, after the file itself, as pyhocon does.
  const envDescriptor = Object.getOwnPropertyDescriptor(Context.prototype, "env");
  Object.defineProperty(Context.prototype, "env", {
    configurable: true,
    get(this: LibraryContext): boolean {
      return settingsByRootContext.has(this.root) ? false : Boolean(envDescriptor?.get?.call(this));
    },
  });
  const keysOfSubstitution = new WeakMap<SubstitutionInstance, string>();
  const libraryResolveKey = SubstitutionNode.prototype.onResolveKey;
  SubstitutionNode.prototype.onResolveKey = async function (this: SubstitutionInstance, scope: unknown) {
    const keys = await libraryResolveKey.call(this, scope);
    if (Array.isArray(keys)) keysOfSubstitution.set(this, keys.join("."));
    return keys;
  };
  // The library's hook for "not found in the file"; it then falls back to its own (disabled) environment.
  SubstitutionNode.prototype.onResolveFailure = async function (this: SubstitutionInstance) {
    const name = keysOfSubstitution.get(this);
    const environment = settingsByRootContext.get(this.context.root)?.environment;
    return name === undefined || environment === undefined || !Object.hasOwn(environment, name) ? undefined : environment[name];
  };

  const refusals: [AdapterClass, string[], string][] = [
    [SourceAdapter, ["HttpSource", "HttpsSource"], "http and https includes are not allowed"],
    // `classpath` is an alias bound when `modulepath` was registered, so it needs its own replacement.
    [SourceAdapter, ["ModulepathSource", "ClasspathSource"], "classpath and modulepath includes are not allowed"],
    [BuilderAdapter, ["ScriptBuilder"], "script includes are not allowed"],
    [
      TransformAdapter,
      [
        "Base64DecodeTransform",
        "Base64EncodeTransform",
        "EvalTransform",
        "FilterTransform",
        "HashTransform",
        "InvokeTransform",
        "MapTransform",
        "QueryTransform",
        "ReduceTransform",
        "SliceTransform",
        "SortTransform",
        "TrimTransform",
        "UniqueTransform",
      ],
      "value transforms are not allowed",
    ],
  ];
  for (const [base, classNames, reason] of refusals) {
    for (const className of classNames) Context.registerComponent(refusingComponent(base, className, reason));
  }
  // Any script include, by extension or by `script(...)`, lands on the refusing builder.
  for (const extension of ["js", "cjs", "mjs"]) Context.defaultBuilderMap[extension] = "script";

  Context.registerComponent(confinedFileSource() as unknown as AdapterClass);
}

/** The library registers a component under its class name (`EvalTransform` -> transform `eval`). */
function refusingComponent(base: AdapterClass, className: string, reason: string): AdapterClass {
  const refusing = class extends (base as new (context: LibraryContext, options: unknown) => object) {
    constructor(context: LibraryContext, options: unknown) {
      super(context, options);
      throw new Error(reason);
    }
  };
  Object.defineProperty(refusing, "name", { value: className });
  return refusing;
}

function confinedFileSource(): SourceClass {
  const FileSource = class FileSource extends LibraryFileSource {
    // Next to the including file first, then under each include root in turn.
    override appendPath(includePath: string): string {
      const besideFile = super.appendPath(includePath);
      const settings = settingsByRootContext.get(this.context.root);
      if (!settings || /^[a-z]+:/i.test(includePath)) return besideFile;
      const candidates = this.context.isPathAbsolute(includePath)
        ? [includePath]
        : [toFilePath(besideFile), ...settings.includeRoots.map((root) => path.resolve(root, includePath))];
      const found = candidates.find(configFileExists);
      if (found !== undefined) return found === candidates[0] ? besideFile : found;
      const from = this.context.url ? fileURLToPath(this.context.url.href) : "";
      const tried = [...new Set(candidates)];
      settings.missingIncludes.set(`${from}\u0000${includePath}`, { include: includePath, from, tried });
      // One appearing later at any of these places is a change.
      for (const candidate of tried) settings.files.add(candidate);
      return besideFile;
    }

    override async onLoadFile(): Promise<unknown> {
      const url = this.context.url;
      const settings = settingsByRootContext.get(this.context.root);
      if (settings && url) {
        const file = fileURLToPath(url.href);
        const real = realPathOf(file);
        if (!settings.allowedRoots.some((root) => real === root || real.startsWith(root + path.sep))) {
          throw new Error(`include of ${file} is outside the network folder and the project root`);
        }
        // Missing optional includes too: one appearing later is a change.
        settings.files.add(file);
      }
      return super.onLoadFile();
    }
  };
  return FileSource;
}

function configFileExists(file: string): boolean {
  return HOCON_EXTENSIONS.some((extension) => existsSync(file + extension));
}

function toFilePath(locator: string): string {
  return locator.startsWith("file:") ? fileURLToPath(locator) : locator;
}

function realPathOf(file: string): string {
  try {
    return realpathSync(file);
  } catch {
    return path.resolve(file);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Results and errors.

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return false;
  const prototype = Object.getPrototypeOf(value) as unknown;
  return prototype === Object.prototype || prototype === null;
}

/** Copies into fresh plain objects and refuses anything JSON cannot carry (a binary include, a function). */
function toJsonObject(value: Record<string, unknown>, file: string, keyPath: string): JsonObject {
  const result: JsonObject = {};
  for (const [key, child] of Object.entries(value)) {
    const childPath = keyPath === "" ? key : `${keyPath}.${key}`;
    Object.defineProperty(result, key, {
      value: toJsonValue(child, file, childPath),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return result;
}

function toJsonValue(value: unknown, file: string, keyPath: string): JsonValue {
  if (value === null || typeof value === "boolean" || typeof value === "string") return value;
  if (typeof value === "number") {
    if (Number.isFinite(value)) return value;
  } else if (Array.isArray(value)) {
    return value.map((element, index) => toJsonValue(element, file, `${keyPath}[${index}]`));
  } else if (isPlainObject(value)) {
    return toJsonObject(value, file, keyPath);
  }
  throw new HoconError(file, `${keyPath} is not a JSON value`);
}

const LOCATION = /line: (\d+), col: (\d+)(?:, file: ([^\s,})]+))?/;

/** The library's messages end with a token dump: `... (Source: X, Token: { value: "}", line: 4, col: 1, file: ... })`. */
function toHoconError(error: unknown, rootFile: string, files: string[], missingIncludes: MissingInclude[]): HoconError {
  if (error instanceof HoconError) return error;
  const message = error instanceof Error ? error.message : String(error);
  const location = LOCATION.exec(message);
  const reason =
    message
      .replace(/\s*\((?:Source: [^,]*, )?Token: \{[\s\S]*\}\)\s*$/, "")
      .replace(/\s*Token: \{[\s\S]*\}\s*$/, "")
      .replace(/\s*\(text: [\s\S]*\)\s*$/, "")
      .trim() || message;
  const locatedFile = location?.[3] ? toFilePath(location[3]) : rootFile;
  return new HoconError(
    locatedFile,
    reason,
    location ? Number(location[1]) : undefined,
    location ? Number(location[2]) : undefined,
    files,
    missingIncludes,
  );
}
