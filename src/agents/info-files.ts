import { existsSync } from "node:fs";
import path from "node:path";
import { HoconError, parseHoconFile, type HoconOptions, type JsonObject } from "./hocon.js";
import { problemOfHoconError, problemsOfMissingIncludes, type RegistryProblem } from "./problem.js";

/** What a reload read from one info file (toolbox, MCP): its value, what was wrong with it, the files to watch. */
export interface LoadedInfo<T> {
  value: T;
  problems: RegistryProblem[];
  files: string[];
}

/**
 * Reads a HOCON info file with `read`; without a file, or when it cannot be parsed, the value is `fallback` (the
 * problem is reported and no network is refused for it).
 */
export async function loadInfoFile<T>(
  file: string | undefined,
  options: HoconOptions,
  read: (raw: JsonObject, file: string) => { value: T; problems: RegistryProblem[] },
  fallback: T,
): Promise<LoadedInfo<T>> {
  if (file === undefined) return { value: fallback, problems: [], files: [] };
  try {
    const parsed = await parseHoconFile(file, options);
    const { value, problems } = read(parsed.value, path.resolve(file));
    return { value, problems: [...problemsOfMissingIncludes(parsed.missingIncludes), ...problems], files: parsed.files };
  } catch (error) {
    if (!(error instanceof HoconError)) throw error;
    return { value: fallback, problems: [problemOfHoconError(error)], files: error.files };
  }
}

/** A file a network names (`toolbox_info_file`): beside it, then under each folder in turn, as includes are found. */
export function locateNamedFile(name: string, folders: string[]): { file: string } | { tried: string[] } {
  if (path.isAbsolute(name)) return existsSync(name) ? { file: name } : { tried: [name] };
  const tried = [...new Set(folders.map((folder) => path.resolve(folder, name)))];
  const file = tried.find((candidate) => existsSync(candidate));
  return file === undefined ? { tried } : { file };
}
