import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import readline from "node:readline";
import { fileURLToPath } from "node:url";

/*
 * Servers under test run in their own process so that they and the load generator each get a core, instead of
 * sharing one event loop. Parent and child talk in JSON lines: the child prints what it listens on, then answers
 * each "cpu" line with its CPU time so far; when its stdin closes (the parent is done or died) it stops.
 */

export interface ServerProcess<Ready> {
  readonly ready: Ready;
  /** User + system CPU time the server process has used so far, in microseconds. */
  cpuMicros(): Promise<number>;
  stop(): Promise<void>;
}

export async function startServerProcess<Ready>(
  script: URL,
  options: { env?: Record<string, string>; nodeArgs?: string[] } = {},
): Promise<ServerProcess<Ready>> {
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), "--import", "tsx", fileURLToPath(script)], {
    env: { ...process.env, ...options.env },
    stdio: ["pipe", "pipe", "inherit"],
  });
  const lines = readline.createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const nextLine = async (): Promise<string> => {
    const { value, done } = await lines.next();
    if (done) throw new Error(`${fileURLToPath(script)} exited before answering`);
    return value;
  };
  const ready = JSON.parse(await nextLine()) as Ready;
  return {
    ready,
    async cpuMicros() {
      child.stdin!.write("cpu\n");
      return (JSON.parse(await nextLine()) as { cpuMicros: number }).cpuMicros;
    },
    stop: () => stopChild(child),
  };
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = once(child, "exit");
  child.stdin!.end();
  const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
  await exited;
  clearTimeout(timer);
}

/** The child's half: announce `ready`, answer CPU queries, run `stop` and exit when the parent lets go. */
export function serveParent(ready: unknown, stop: () => Promise<void>): void {
  process.stdout.write(JSON.stringify(ready) + "\n");
  const lines = readline.createInterface({ input: process.stdin });
  lines.on("line", (line) => {
    if (line !== "cpu") return;
    const usage = process.cpuUsage();
    process.stdout.write(JSON.stringify({ cpuMicros: usage.user + usage.system }) + "\n");
  });
  lines.on("close", () => {
    void stop().finally(() => process.exit(0));
  });
}
