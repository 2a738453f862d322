import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";

/**
 * vitest's global setup: every temporary folder of the run (servers' data directories, configuration files, private
 * PostgreSQL clusters, spawned Axon processes' data) is made under one folder through TMPDIR, which the test processes
 * and what they spawn inherit, and which goes when the run ends, whatever a test left in it.
 */
export default function setup(): () => void {
  const root = mkdtempSync(path.join(os.tmpdir(), "axon-tests-"));
  // Others may pass through, not list: a private PostgreSQL cluster runs as the postgres user in a folder of its own.
  chmodSync(root, 0o711);
  process.env.TMPDIR = root;
  return () => rmSync(root, { recursive: true, force: true, maxRetries: 3 });
}
