// Builds src/ into dist/ as bundled JavaScript: what `npm start`, the `axon` command and the benches run. Type checking
// is `npm run lint`'s job, not this one's.
import { readdir, readFile, rm, stat } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build, type Plugin } from "esbuild";
import { projectRoot } from "../src/project-root.js";

const sourceDir = path.join(projectRoot, "src");
const buildDir = path.join(projectRoot, "dist");
/** dist/web is the web console's build (vite), not this one's. */
const webDir = path.join(buildDir, "web");

/** What bench/serve-axon.ts imports from the build, to run Axon as `npm start` does with a logger of its own. */
const benchEntries = ["axon.ts", "config.ts", "logger.ts", "telemetry/start.ts"];

/**
 * What Node starts: the server, the CLI, the MCP server on stdio, and each worker thread's code (every
 * `thread-main.ts`; src/project-root.ts's entryFile names them). Everything they import, Axon's modules and
 * its dependencies alike, is bundled with them: a start then opens a few files instead of ~500, a fifth less time to
 * /readyz. What is imported lazily (the LLM SDKs, MCP, PostgreSQL) becomes a chunk of its own, loaded
 * when first used.
 */
const entryPoints = ["main.ts", "cli/main.ts", "mcp/stdio.ts", ...benchEntries];

/**
 * Left to Node: native addons, packages that find their own files at run time (the schema engine's wasm, tsx's
 * loader, pg's optional native binding), and what only development installs.
 */
const external = ["better-sqlite3", "@prisma/schema-engine-wasm", "tsx", "pg-native", "pino-pretty"];

export async function buildServer(): Promise<void> {
  const { metafile } = await build({
    entryPoints: [...entryPoints, ...(await threadEntries())].map((entry) => path.join(sourceDir, entry)),
    outdir: buildDir,
    outbase: sourceDir,
    entryNames: "[dir]/[name]",
    chunkNames: "chunks/[name]-[hash]",
    bundle: true,
    splitting: true,
    external,
    format: "esm",
    platform: "node",
    target: "node20",
    // The CommonJS packages in the bundle call require() for Node's built-in modules.
    banner: { js: 'import { createRequire as __createRequire } from "node:module"; const require = __createRequire(import.meta.url);' },
    plugins: [prismaWasmFromFile],
    sourcemap: "linked",
    logLevel: "warning",
    metafile: true,
  });
  // What an earlier build wrote and this one did not (a module deleted from src/, a chunk whose content changed) goes,
  // once a day old: a server started from that build may still load one of its chunks lazily (the LLM SDKs' with
  // its first chat), and must find it.
  const written = new Set(Object.keys(metafile.outputs).map((file) => path.resolve(projectRoot, file)));
  const present = (await readdir(buildDir, { recursive: true, withFileTypes: true })).filter((entry) => entry.isFile());
  const candidates = present.map((entry) => path.join(entry.parentPath, entry.name)).filter((file) => !file.startsWith(webDir + path.sep) && !written.has(file));
  const dayAgo = Date.now() - 24 * 60 * 60 * 1000;
  const stale = await Promise.all(candidates.map(async (file) => ((await stat(file)).mtimeMs < dayAgo ? file : undefined)));
  await Promise.all(stale.map((file) => file && rm(file, { force: true })));
}

async function threadEntries(): Promise<string[]> {
  return (await readdir(sourceDir, { recursive: true })).filter((file) => path.basename(file) === "thread-main.ts");
}

/**
 * Prisma's generated client imports its query compiler as a module holding one base64 string (2.2 MB for the small
 * build the schema asks for), and compiling that module is a large share of a start. In the build the compiler is a
 * .wasm file of its own, next to the chunk that reads it (esbuild's `file` loader gives its path relative to that
 * chunk), so a start neither compiles nor decodes the text. The client still calls `Buffer.from(wasm, "base64")` on
 * what the module exports: given an ArrayBuffer, that wraps it (the encoding taken for an offset that is not a
 * number, so 0) without decoding or copying it.
 */
const prismaWasmFromFile: Plugin = {
  name: "prisma-wasm-from-file",
  setup(build) {
    const base64Module = /[\\/]@prisma[\\/]client[\\/]runtime[\\/]query_compiler_\w+\.\w+\.wasm-base64\.mjs$/;
    build.onLoad({ filter: base64Module }, ({ path: file }) => ({
      contents: `import { readFileSync } from "node:fs";
import wasmFile from ${JSON.stringify(`${file}.wasm`)};
const bytes = readFileSync(new URL(wasmFile, import.meta.url));
export const wasm = bytes.byteLength === bytes.buffer.byteLength ? bytes.buffer : bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
`,
      loader: "js",
    }));
    build.onResolve({ filter: /\.wasm-base64\.mjs\.wasm$/ }, ({ path: file }) => ({ path: file, namespace: "prisma-wasm-file" }));
    build.onLoad({ filter: /.*/, namespace: "prisma-wasm-file" }, async ({ path: file }) => {
      const source = await readFile(file.slice(0, -".wasm".length), "utf8");
      const base64 = /^(?:export )?const wasm = "([A-Za-z0-9+/=]+)"/m.exec(source)?.[1];
      if (base64 === undefined) throw new Error(`${file}: not the shape this build expects (export const wasm = "<base64>")`);
      return { contents: Buffer.from(base64, "base64"), loader: "file" };
    });
  },
};

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildServer();
