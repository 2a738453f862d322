import { readFileSync } from "node:fs";
import path from "node:path";

/**
 * Axon's own package: its folder and package.json, found upwards from this module, so the answer is the same from
 * src/ under tsx, from a bundled chunk in dist/, and from any working directory.
 */
export const axonPackage = findAxonPackage(import.meta.dirname);

/** The checkout's root: prisma/, dist/web and the other files Axon reads at run time are found from here. */
export const projectRoot = axonPackage.root;

/** Whether this is the build (dist/, JavaScript) rather than the sources run through tsx. */
export const runningBuild = import.meta.url.endsWith(".js");

/**
 * A worker thread's code (`<dir>/thread-main.ts`, an entry of the build): its bundled entry in dist/; from the sources,
 * the `thread-entry.mjs` beside it, which registers tsx first (Node 20 does not hand module hooks to workers).
 */
export function threadEntryFile(dir: string): string {
  return runningBuild ? entryFile(`${dir}/thread-main`) : path.join(projectRoot, "src", dir, "thread-entry.mjs");
}

/** The file Node runs for one of the build's entry points (`main`, `mcp/stdio`, ...): dist/<entry>.js, or src/<entry>.ts. */
export function entryFile(entry: string): string {
  return runningBuild ? path.join(projectRoot, "dist", `${entry}.js`) : path.join(projectRoot, "src", `${entry}.ts`);
}

function findAxonPackage(start: string): { root: string; version: string } {
  for (let dir = start; dir !== path.dirname(dir); dir = path.dirname(dir)) {
    let manifest: { name?: string; version?: string };
    try {
      manifest = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")) as typeof manifest;
    } catch {
      continue;
    }
    if (manifest.name === "axon") return { root: dir, version: manifest.version ?? "unknown" };
  }
  throw new Error(`Axon's package.json was not found above ${start}`);
}
