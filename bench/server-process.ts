import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import readline from "node:readline";
import { fileURLToPath } from "node:url";
import { buildServer } from "../scripts/build.js";

/*
 * Servers under test run in their own process so that they and the load generator each get a core, instead of
 * sharing one event loop. Parent and child talk in JSON lines: the child prints what it listens on, then answers
 * each "cpu" line with a sample (its CPU time so far, its memory); when its stdin closes (the parent is done or
 * died) it stops.
 */

/** What a server process reports about itself when asked. */
export interface ServerSample {
  /** User + system CPU time used so far, in microseconds. */
  cpuMicros: number;
  rssBytes: number;
  heapUsedBytes: number;
  /** The kernel's high-water mark of the resident set over the process's whole life. */
  maxRssBytes: number;
  /** Highest V8 heap in use seen since the previous sample (sampled every few milliseconds, so a floor). */
  peakHeapUsedBytes: number;
  /** Highest resident set seen since the previous sample, by the same sampler (maxRssBytes never comes down). */
  peakRssBytes: number;
  /** Whatever else the child adds (see `serveParent`'s `extra`). */
  extra?: unknown;
}

export interface ServerProcess<Ready> {
  readonly ready: Ready;
  readonly pid: number;
  /** User + system CPU time the server process has used so far, in microseconds. */
  cpuMicros(): Promise<number>;
  /** CPU and memory; also starts the next peak-heap window. */
  sample(): Promise<ServerSample>;
  stop(): Promise<void>;
}

/** Servers under test run the build (dist/): it is made from this tree once per bench run, before the first starts. */
let built: Promise<void> | undefined;

export async function startServerProcess<Ready>(
  script: URL,
  /** `wrapper`: a command the server runs under, e.g. valgrind and its options. */
  options: { env?: Record<string, string>; nodeArgs?: string[]; wrapper?: string[] } = {},
): Promise<ServerProcess<Ready>> {
  await (built ??= buildServer());
  const [command, ...args] = [...(options.wrapper ?? []), process.execPath, ...(options.nodeArgs ?? []), "--import", "tsx", fileURLToPath(script)];
  const child = spawn(command!, args, {
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
  const sample = async (): Promise<ServerSample> => {
    child.stdin!.write("cpu\n");
    return JSON.parse(await nextLine()) as ServerSample;
  };
  return {
    ready,
    pid: child.pid!,
    sample,
    cpuMicros: async () => (await sample()).cpuMicros,
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

/**
 * The child's half: announce `ready`, answer sample queries (with `extra()` when given), run `stop` and exit when
 * the parent lets go.
 */
export function serveParent(ready: unknown, stop: () => Promise<void>, extra?: () => unknown): void {
  process.stdout.write(JSON.stringify(ready) + "\n");
  // A heap peak lasts only until the next GC, so it is sampled every 20 ms: 20-300 µs a sample, up to 1.5% of a core on
  // a busy machine, which the CPU-per-request benches leave out (BENCH_MEMORY_SAMPLER=off).
  let peakHeapUsedBytes = process.memoryUsage().heapUsed;
  let peakRssBytes = process.memoryUsage().rss;
  const sampler =
    process.env.BENCH_MEMORY_SAMPLER === "off"
      ? undefined
      : setInterval(() => {
          const memory = process.memoryUsage();
          peakHeapUsedBytes = Math.max(peakHeapUsedBytes, memory.heapUsed);
          peakRssBytes = Math.max(peakRssBytes, memory.rss);
        }, 20).unref();
  const lines = readline.createInterface({ input: process.stdin });
  lines.on("line", (line) => {
    if (line !== "cpu") return;
    const usage = process.cpuUsage();
    const memory = process.memoryUsage();
    const sample: ServerSample = {
      cpuMicros: usage.user + usage.system,
      rssBytes: memory.rss,
      heapUsedBytes: memory.heapUsed,
      maxRssBytes: process.resourceUsage().maxRSS * 1024,
      peakHeapUsedBytes: Math.max(peakHeapUsedBytes, memory.heapUsed),
      peakRssBytes: Math.max(peakRssBytes, memory.rss),
      ...(extra ? { extra: extra() } : {}),
    };
    peakHeapUsedBytes = memory.heapUsed;
    peakRssBytes = memory.rss;
    process.stdout.write(JSON.stringify(sample) + "\n");
  });
  lines.on("close", () => {
    clearInterval(sampler);
    void stop().finally(() => process.exit(0));
  });
}
