import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { percentile } from "./load.js";
import { machine } from "./machine.js";

/*
 * Axon's start-up, as a user meets it: `node dist/main.js` (what `npm start` runs) until /readyz answers 200, on a
 * fresh data directory (first start: secrets, sealing key, SQLite file and migrations made) and again on the same one;
 * `npm start` once more; and `node bin/axon.mjs --help` until it exits. After the restart's /readyz the server idles a
 * few seconds, then its RSS and threads are read: what an idle server nobody has used yet holds. Part of
 * `npm run bench`; alone:
 *
 *   npx tsx bench/start.ts --starts 9
 *   npx tsx bench/start.ts --starts 9 --compare /tmp/main-checkout   # another built checkout, interleaved run by run
 */

const projectRoot = path.resolve(import.meta.dirname, "..");

export interface StartUpSettings {
  starts: number;
  /** Checkouts with a built dist/, timed in turn within each run so that the machine's drift falls on all of them. */
  checkouts: string[];
}

export async function printStartUp({ starts, checkouts }: StartUpSettings): Promise<void> {
  const timings = checkouts.map(() => ({ firstStarts: [] as Timing[], restarts: [] as Timing[], npmStarts: [] as Timing[], helps: [] as Timing[] }));
  const loadBefore = os.loadavg()[0]!;
  for (let run = 0; run < starts; run++) {
    // Forwards then backwards, so that neither checkout always runs first.
    const order = checkouts.map((_, index) => index);
    if (run % 2 === 1) order.reverse();
    for (const index of order) {
      const root = checkouts[index]!;
      const timing = timings[index]!;
      const dataDir = mkdtempSync(path.join(os.tmpdir(), "axon-bench-start-"));
      try {
        timing.firstStarts.push(await timeToReady(root, dataDir, [process.execPath, "dist/main.js"]));
        timing.restarts.push(await timeToReady(root, dataDir, [process.execPath, "dist/main.js"], idleMs));
        timing.npmStarts.push(await timeToReady(root, dataDir, ["npm", "start", "--silent"]));
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
      }
      timing.helps.push(await timeToExit(root, ["bin/axon.mjs", "--help"]));
    }
  }
  console.log(`Start-up (${starts} runs each, load average ${loadBefore.toFixed(2)} at the start, ${os.loadavg()[0]!.toFixed(2)} at the end):`);
  console.log("");
  console.log(`| ${checkouts.length > 1 ? "Checkout | " : ""}What | median | min | max | process CPU ms, median |`);
  console.log(`| ${checkouts.length > 1 ? "--- | " : ""}--- | ---: | ---: | ---: | ---: |`);
  checkouts.forEach((root, index) => {
    const { firstStarts, restarts, npmStarts, helps } = timings[index]!;
    for (const [what, runs] of [
      ["`node dist/main.js` to /readyz 200, first start (fresh data directory)", firstStarts],
      ["`node dist/main.js` to /readyz 200, restart (same data directory)", restarts],
      ["`npm start` to /readyz 200, restart (npm's own start-up included)", npmStarts],
      ["`node bin/axon.mjs --help` to exit", helps],
    ] as const) {
      const wall = runs.map((timing) => timing.wallMs).sort((a, b) => a - b);
      const cpu = runs.flatMap((timing) => (timing.cpuMs === undefined ? [] : [timing.cpuMs])).sort((a, b) => a - b);
      const cpuMedian = cpu.length > 0 ? String(Math.round(percentile(cpu, 0.5))) : "–";
      const checkout = checkouts.length > 1 ? `${root} | ` : "";
      console.log(`| ${checkout}${what} | ${Math.round(percentile(wall, 0.5))} ms | ${Math.round(wall[0]!)} ms | ${Math.round(wall.at(-1)!)} ms | ${cpuMedian} |`);
    }
    const idle = restarts.flatMap((timing) => (timing.idle ? [timing.idle] : []));
    const rss = idle.map((sample) => sample.rssMb).sort((a, b) => a - b);
    const threads = idle.map((sample) => sample.threads).sort((a, b) => a - b);
    const checkout = checkouts.length > 1 ? `${root} | ` : "";
    console.log(`| ${checkout}RSS ${idleMs / 1000} s after the restart's /readyz, idle | ${Math.round(percentile(rss, 0.5))} MB | ${Math.round(rss[0]!)} MB | ${Math.round(rss.at(-1)!)} MB | – |`);
    console.log(`| ${checkout}threads then | ${percentile(threads, 0.5)} | ${threads[0]} | ${threads.at(-1)} | – |`);
  });
}

/** Wall time, and the CPU time the process used by then (all its threads), which a busy machine inflates far less. */
interface Timing {
  wallMs: number;
  /** Undefined when the process timed is not Axon's own (npm start). */
  cpuMs: number | undefined;
  /** Read from /proc after the server idled, when asked for. */
  idle?: { rssMb: number; threads: number };
}

/** How long a restarted server idles before its memory and threads are read. */
const idleMs = 3_000;

// utime + stime of /proc/<pid>/stat, in clock ticks (USER_HZ, 100 on Linux).
function cpuMsOf(pid: number): number {
  const fields = statFields(pid);
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

// VmRSS and Threads of /proc/<pid>/status.
function idleOf(pid: number): { rssMb: number; threads: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, "m").exec(status)?.[1]);
  return { rssMb: field("VmRSS") / 1024, threads: field("Threads") };
}

// cutime + cstime of this process: the CPU time of its children once they have exited and been reaped.
function childrenCpuMs(): number {
  const fields = statFields(process.pid);
  return (Number(fields[13]) + Number(fields[14])) * 10;
}

// The fields of /proc/<pid>/stat after the command name (which may hold spaces), starting with the state.
function statFields(pid: number): string[] {
  return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
}

async function timeToReady(root: string, dataDir: string, [command, ...args]: [string, ...string[]], idleAfterMs?: number): Promise<Timing> {
  const port = await freePort();
  const started = performance.now();
  // In a process group of its own, so that stopping it stops what it started (npm runs Axon in a child).
  const child = spawn(command, args, {
    cwd: root,
    env: { ...process.env, AGENT_HTTP_PORT: String(port), AXON_HOST: "127.0.0.1", AXON_DATA_DIR: dataDir, LOG_LEVEL: "warn" },
    stdio: "ignore",
    detached: true,
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  try {
    // Polling every 5 ms adds at most 5 ms to a figure of hundreds.
    for (;;) {
      if (child.exitCode !== null) throw new Error(`Axon exited with ${child.exitCode} before it was ready`);
      const ready = await fetch(`http://127.0.0.1:${port}/readyz`).then(
        (response) => response.status === 200,
        () => false,
      );
      if (ready) {
        const timing = { wallMs: performance.now() - started, cpuMs: command === process.execPath ? cpuMsOf(child.pid!) : undefined };
        if (idleAfterMs === undefined) return timing;
        await new Promise((resolve) => setTimeout(resolve, idleAfterMs));
        return { ...timing, idle: idleOf(child.pid!) };
      }
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  } finally {
    process.kill(-child.pid!, "SIGTERM");
    await exited;
  }
}

async function timeToExit(root: string, args: string[]): Promise<Timing> {
  const cpuBefore = childrenCpuMs();
  const started = performance.now();
  const child = spawn(process.execPath, args, { cwd: root, stdio: "ignore" });
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  if (code !== 0) throw new Error(`node ${args.join(" ")} exited with ${code}`);
  const wallMs = performance.now() - started;
  // An exited child's CPU time is its rusage, which Node does not expose: the children's total before and after does.
  return { wallMs, cpuMs: childrenCpuMs() - cpuBefore };
}

async function freePort(): Promise<number> {
  const server = net.createServer().listen(0, "127.0.0.1");
  await new Promise((resolve) => server.once("listening", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values: flags } = parseArgs({ options: { starts: { type: "string", default: "7" }, compare: { type: "string", multiple: true } } });
  const starts = Number(flags.starts);
  if (!(starts > 0)) throw new Error(`--starts must be a positive number, got ${flags.starts}`);
  // Runs the build, as `npm run bench` does: the figures are the compiled start's.
  const { buildServer } = await import("../scripts/build.js");
  await buildServer();
  console.log(`Machine: ${machine()}`);
  await printStartUp({ starts, checkouts: [projectRoot, ...(flags.compare ?? []).map((dir) => path.resolve(dir))] });
}
