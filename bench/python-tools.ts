import { execFileSync } from "node:child_process";
import os from "node:os";
import path from "node:path";
import { createLogger } from "../src/logger.js";
import { runnerFile } from "../src/agents/python/python-worker.js";
import { PythonPool } from "../src/agents/python/python-pool.js";
import { machine } from "./machine.js";

/*
 * `npx tsx bench/python-tools.ts [calls]`: what the Python bridge adds to a coded tool call. The same trivial async tool
 * (bench/coded_tools/python_bench/trivial.py) is called, in the same run, directly from Python (`await
 * tool.async_invoke(args, sly_data)` in a loop) and through one Python worker of the pool (as a chat calls it: JSON
 * line out, the worker's asyncio task, JSON line back): p50 of one call at a time, and calls/s with 200 in flight.
 * AXON_PYTHON picks the interpreter, as for the server.
 */

const calls = Number(process.argv[2] ?? 20_000);
const inFlight = 200;
const python = process.env.AXON_PYTHON || "python3";
const root = path.join(import.meta.dirname, "coded_tools");
const file = path.join(root, "python_bench", "trivial.py");
const args = { x: 1, origin: [{ tool: "Front", instantiation_index: 1 }, { tool: "Trivial", instantiation_index: 1 }] };

/** The same tool called from Python itself: no bridge. */
function direct(): { p50Micros: number; callsPerSecond: number } {
  const script = `
import asyncio, sys, time
sys.path[0:0] = [${JSON.stringify(root)}, ${JSON.stringify(path.join(path.dirname(runnerFile), "stand-in"))}]
from python_bench.trivial import Trivial
async def main(n):
    tool, args = Trivial(), ${JSON.stringify(args)}
    times = []
    for _ in range(n):
        start = time.perf_counter()
        await tool.async_invoke(dict(args), {})
        times.append(time.perf_counter() - start)
    times.sort()
    start = time.perf_counter()
    await asyncio.gather(*(tool.async_invoke(dict(args), {}) for _ in range(n)))
    print(times[n // 2] * 1e6, n / (time.perf_counter() - start))
asyncio.run(main(${calls}))
`;
  const [p50Micros, callsPerSecond] = execFileSync(python, ["-c", script], { encoding: "utf8" }).trim().split(" ").map(Number);
  return { p50Micros: p50Micros!, callsPerSecond: callsPerSecond! };
}

async function bridged(): Promise<{ p50Micros: number; callsPerSecond: number }> {
  const pool = new PythonPool({ command: python, workers: 1, cancelGraceMs: 5000, importRoots: [root] }, createLogger("silent"));
  const chat = pool.chat();
  const slyData = {};
  const never = new AbortController().signal;
  const call = () => chat.call(slyData, { module: "python_bench.trivial", file, className: "Trivial", args }, () => {}, never);
  for (let i = 0; i < 200; i++) await call(); // the worker started, the module imported, both sides warm
  const times: number[] = [];
  for (let i = 0; i < calls; i++) {
    const start = performance.now();
    await call();
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  const start = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next++ < calls) await call();
    }),
  );
  const callsPerSecond = calls / ((performance.now() - start) / 1000);
  chat.close();
  await pool.close();
  return { p50Micros: times[Math.floor(calls / 2)]! * 1000, callsPerSecond };
}

const alone = direct();
const bridge = await bridged();
console.log(`Machine: ${machine()}`);
console.log(`| ${calls} trivial async calls | p50 µs (one at a time) | calls/s (${inFlight} in flight) |\n| --- | ---: | ---: |`);
console.log(`| Python, directly | ${alone.p50Micros.toFixed(1)} | ${alone.callsPerSecond.toFixed(0)} |`);
console.log(`| through one Axon Python worker | ${bridge.p50Micros.toFixed(1)} | ${bridge.callsPerSecond.toFixed(0)} |`);
console.log(`\nadded by the bridge at p50: ${((bridge.p50Micros - alone.p50Micros) / 1000).toFixed(3)} ms (target ≤ 0.5 ms); one worker: ${bridge.callsPerSecond.toFixed(0)} calls/s (target ≥ 3000)`);
console.log(`load average ${os.loadavg().map((load) => load.toFixed(2)).join(", ")}`);
