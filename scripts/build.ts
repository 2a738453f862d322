// Builds src/ into dist/ as JavaScript, one module per file (no bundle, so paths relative to a module stay as they are):
// what `npm start`, the `axon` command and the benches run. Type checking is `npm run lint`'s job, not this one's.
import { readdir, rm } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const projectRoot = path.resolve(import.meta.dirname, "..");
const sourceDir = path.join(projectRoot, "src");
const buildDir = path.join(projectRoot, "dist");
/** dist/web is the web console's build (vite), not this one's. */
const foreign = new Set(["web"]);

export async function buildServer(): Promise<void> {
  const entryPoints = (await readdir(sourceDir, { recursive: true }))
    .filter((file) => file.endsWith(".ts") && !file.endsWith(".d.ts"))
    .map((file) => path.join(sourceDir, file));
  // A module deleted from src/ must not linger in dist/.
  const previous = await readdir(buildDir).catch(() => []);
  await Promise.all(previous.filter((name) => !foreign.has(name)).map((name) => rm(path.join(buildDir, name), { recursive: true, force: true })));
  await build({
    entryPoints,
    outdir: buildDir,
    outbase: sourceDir,
    format: "esm",
    platform: "node",
    target: "node20",
    sourcemap: "linked",
    logLevel: "warning",
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildServer();
