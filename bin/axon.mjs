#!/usr/bin/env node
// The `axon` command: the build of src/cli/main.ts (dist/, made by `npm ci` or `npm run build`). `axon --help` lists the commands.
import { existsSync } from "node:fs";
import module from "node:module";

const main = new URL("../dist/cli/main.js", import.meta.url);
if (!existsSync(main)) {
  process.stderr.write("axon: dist/ is not built: run npm run build (npm ci builds it)\n");
  process.exit(1);
}
// Node 22.1 and later keep what V8 compiles from the build between runs, as dist/main.js has them do for the server.
module.enableCompileCache?.();
await import(main.href);
