import path from "node:path";
import { pathToFileURL } from "node:url";

const projectRoot = path.resolve(import.meta.dirname, "../..");

/**
 * `axon serve` and `axon mcp` run an entry point of src/ in this process. The entry reads its own options from
 * process.argv, as if it had been started directly, and keeps the process alive for as long as it serves.
 */
export async function runEntryPoint(entry: "src/main.ts" | "src/mcp/stdio.ts", args: string[]): Promise<void> {
  const file = path.join(projectRoot, entry);
  process.argv = [process.argv[0] ?? "node", file, ...args];
  await import(pathToFileURL(file).href);
}
