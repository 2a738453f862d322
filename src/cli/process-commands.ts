import { fileURLToPath } from "node:url";

/**
 * `axon serve` and `axon mcp` run an entry point of src/ in this process. The entry reads its own options from
 * process.argv, as if it had been started directly, and keeps the process alive for as long as it serves.
 */
export async function runEntryPoint(entry: "src/main.ts" | "src/mcp/stdio.ts", args: string[]): Promise<void> {
  // Beside this module, so the build (dist/) runs its own entry points and the sources (tsx) theirs.
  const url = new URL(`../${entry.slice("src/".length, -".ts".length)}.js`, import.meta.url);
  process.argv = [process.argv[0] ?? "node", fileURLToPath(url), ...args];
  await import(url.href);
}
