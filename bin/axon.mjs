#!/usr/bin/env node
// The `axon` command: `axon serve`, `axon mcp` (an MCP server on stdio), `axon test <case.hocon...>`.
// Each runs an entry point of src/ through tsx: there is no build step.
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { register } from "tsx/esm/api";

const commands = {
  serve: "src/main.ts",
  mcp: "src/mcp/stdio.ts",
  test: "src/network-tests/cli.ts",
};

const [command = "serve", ...args] = process.argv.slice(2);
const entry = commands[command];
if (entry === undefined) {
  process.stderr.write(`usage: axon <${Object.keys(commands).join(" | ")}> [options]\n`);
  process.exit(2);
}
register();
const file = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", entry);
// The entry reads its own options from process.argv, as if it had been started directly.
process.argv = [process.argv[0], file, ...args];
await import(pathToFileURL(file).href);
