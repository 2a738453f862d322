import { buildServer } from "../../scripts/build.js";

/**
 * vitest's global setup: tests that start Axon as a process (`node dist/main.js`, `bin/axon.mjs`) run the build, so
 * it is made from this tree first, once per run (esbuild: well under a second).
 */
export default async function setup(): Promise<void> {
  await buildServer();
}
