import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { projectRoot } from "./server.js";

/** An Axon started as `npm start` starts it: the build's `dist/main.js` in its own Node process, on 127.0.0.1, port 0. */
export interface AxonProcess {
  /** `http://127.0.0.1:<port>` */
  url: string;
  port: number;
  /** The start-up line ("Axon is serving ..."), parsed. */
  started: Record<string, unknown>;
  /** Every JSON log line written to stdout so far. */
  logs: Record<string, unknown>[];
  child: ChildProcess;
  /** SIGTERM, then the exit code once stdout is drained; SIGKILL if it has not exited within `graceMs`. */
  stop(graceMs?: number): Promise<number | null>;
}

const running = new Set<ChildProcess>();
// A test runner that dies mid-test must not leave servers behind.
process.once("exit", () => {
  for (const child of running) child.kill("SIGKILL");
});

/**
 * Spawns `node dist/main.js` (built from this tree by the tests' global setup) with the test's environment on top of
 * this one's, and resolves once it logs the URL it serves. Rejects with its stderr if it exits first.
 */
export async function startAxonProcess(env: Record<string, string>, options: { startupMs?: number } = {}): Promise<AxonProcess> {
  const child = spawnAxon(env);
  // "close" (not "exit"): the last log lines have been read by then.
  const closed = new Promise<number | null>((resolve) =>
    child.once("close", (code) => {
      running.delete(child);
      resolve(code);
    }),
  );
  let stderr = "";
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const logs: Record<string, unknown>[] = [];
  const started = await new Promise<Record<string, unknown>>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`Axon did not start within ${options.startupMs ?? 15_000} ms\n${stderr}`)), options.startupMs ?? 15_000);
    createInterface({ input: child.stdout! }).on("line", (line) => {
      let entry: Record<string, unknown>;
      try {
        entry = JSON.parse(line) as Record<string, unknown>;
      } catch {
        return; // not a log line
      }
      logs.push(entry);
      if (typeof entry.url === "string") {
        clearTimeout(timer);
        resolve(entry);
      }
    });
    void closed.then((code) => {
      clearTimeout(timer);
      // A start-up failure is a log line (JSON on stdout), not stderr: the last few say why.
      reject(new Error(`Axon exited with ${code} before serving\n${stderr}${logs.slice(-3).map((line) => JSON.stringify(line)).join("\n")}`));
    });
  }).catch((error: unknown) => {
    child.kill("SIGKILL");
    throw error;
  });
  const port = Number(new URL(String(started.url)).port);
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    started,
    logs,
    child,
    async stop(graceMs = 5_000) {
      if (child.exitCode !== null || child.signalCode !== null) return closed;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
      try {
        return await closed;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/** What a process that was expected to stop on its own left: its exit code, its JSON log lines and its stderr. */
export interface AxonExit {
  code: number | null;
  logs: Record<string, unknown>[];
  stderr: string;
}

/** Spawns `node dist/main.js` as startAxonProcess does and resolves once it exits (killed after `timeoutMs`). */
export async function runAxonProcessToExit(env: Record<string, string>, options: { timeoutMs?: number } = {}): Promise<AxonExit> {
  const child = spawnAxon(env);
  const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 15_000);
  let stdout = "";
  let stderr = "";
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
  clearTimeout(timer);
  running.delete(child);
  const logs = stdout.split("\n").flatMap((line) => {
    try {
      return [JSON.parse(line) as Record<string, unknown>];
    } catch {
      return [];
    }
  });
  return { code, logs, stderr };
}

function spawnAxon(env: Record<string, string>): ChildProcess {
  const child = spawn(process.execPath, ["dist/main.js"], {
    cwd: projectRoot,
    env: {
      ...process.env,
      LOG_LEVEL: "info",
      AXON_DATA_DIR: mkdtempSync(path.join(os.tmpdir(), "axon-process-")),
      ...env,
      AGENT_HTTP_PORT: "0",
      AXON_HOST: "127.0.0.1",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.add(child);
  return child;
}
