import { spawnSync } from "node:child_process";
import { accessSync, constants } from "node:fs";
import path from "node:path";
import { CliFailure, ExitStatus } from "./cli-failure.js";

/**
 * `--ca-file` (AXON_CA_FILE): trust a private CA for an https --url. Node 20 takes extra CAs for every client it has
 * (fetch, HTTP/2, gRPC) only from NODE_EXTRA_CA_CERTS at start-up, so the command runs again, once, in a process
 * started with it; its exit status is ours. Returns without doing anything when this process already trusts the file.
 */
export function rerunTrusting(caFile: string): never | void {
  const file = path.resolve(caFile);
  if (process.env.NODE_EXTRA_CA_CERTS === file) return;
  try {
    accessSync(file, constants.R_OK);
  } catch {
    throw new CliFailure(`--ca-file: cannot read ${file}`, ExitStatus.usage);
  }
  const run = spawnSync(process.execPath, [...process.execArgv, ...process.argv.slice(1)], {
    stdio: "inherit",
    env: { ...process.env, NODE_EXTRA_CA_CERTS: file },
  });
  process.exit(run.status ?? 1);
}
