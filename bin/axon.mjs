#!/usr/bin/env node
// The `axon` command: loads src/cli/main.ts through tsx (there is no build step). `axon --help` lists the commands.
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { register } from "tsx/esm/api";

register();
const main = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "src", "cli", "main.ts");
await import(pathToFileURL(main).href);
