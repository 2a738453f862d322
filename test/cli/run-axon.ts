import { execFile } from "node:child_process";
import { projectRoot } from "../support/server.js";

export interface Run {
  status: number;
  stdout: string;
  stderr: string;
}

/** The real `axon` binary, as a user runs it from the repository, with exactly this environment (and PATH). */
export function runAxon(args: string[], env: Record<string, string>, options: { input?: string } = {}): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      ["bin/axon.mjs", ...args],
      { cwd: projectRoot, env: { PATH: process.env.PATH ?? "", ...env }, timeout: 30_000 },
      (error, stdout, stderr) => resolve({ status: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
    child.stdin?.end(options.input ?? "");
  });
}

/**
 * `axon` on a pseudo-terminal (util-linux `script`), as a person at a terminal runs it: stdout and stderr arrive
 * together, as the terminal shows them. `input` is typed in, line by line.
 */
export function runAxonOnTerminal(args: string[], env: Record<string, string>): Promise<Run> {
  const command = ["node", "bin/axon.mjs", ...args].map((word) => `'${word.replaceAll("'", `'\\''`)}'`).join(" ");
  return new Promise((resolve) => {
    const child = execFile(
      "script",
      ["--quiet", "--return", "--flush", "--command", command, "/dev/null"],
      { cwd: projectRoot, env: { PATH: process.env.PATH ?? "", TERM: "xterm", ...env }, timeout: 30_000 },
      (error, stdout, stderr) => resolve({ status: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
    child.stdin?.end();
  });
}
