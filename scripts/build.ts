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
const webDir = path.join(buildDir, "web");

export async function buildServer(): Promise<void> {
  const entryPoints = (await readdir(sourceDir, { recursive: true }))
    .filter((file) => file.endsWith(".ts") && !file.endsWith(".d.ts"))
    .map((file) => path.join(sourceDir, file));
  const { metafile } = await build({
    entryPoints,
    outdir: buildDir,
    outbase: sourceDir,
    format: "esm",
    platform: "node",
    target: "node20",
    sourcemap: "linked",
    logLevel: "warning",
    metafile: true,
  });
  // A module deleted from src/ must not linger in dist/. Files are overwritten in place, never removed first, so a
  // server running from dist/ can still load its lazy modules while the build runs.
  const written = new Set(Object.keys(metafile.outputs).map((file) => path.resolve(projectRoot, file)));
  const present = (await readdir(buildDir, { recursive: true, withFileTypes: true })).filter((entry) => entry.isFile());
  const stale = present.map((entry) => path.join(entry.parentPath, entry.name)).filter((file) => !file.startsWith(webDir + path.sep) && !written.has(file));
  await Promise.all(stale.map((file) => rm(file, { force: true })));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildServer();
