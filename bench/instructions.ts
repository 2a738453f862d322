import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { KeepAliveHttpClient, type HttpRequestSpec } from "./clients.js";
import { cannedHttpLists, httpLists as specs } from "./http-lists.js";
import { machine } from "./machine.js";
import type { AxonReady } from "./serve-axon.js";
import type { BaselinesReady, CannedResponses } from "./serve-baselines.js";
import { startServerProcess, type ServerProcess } from "./server-process.js";

/*
 * `npx tsx bench/instructions.ts [--requests N] [checkout…]`: the instructions the server's main thread executes per
 * REST and Connect JSON List, counted by valgrind's callgrind, for Axon (this build, or each checkout's dist/) and bare
 * node:http. Counts do not move with the machine's load the way CPU time does (two runs of one build agree within
 * about 1 %), so a change of a few hundred instructions a call shows in one run. They leave out the kernel, cache
 * misses and the other threads (GC helpers), so they guide work on the code; `npm run bench` is what measures it.
 * Axon logs at warn here: under valgrind every call falls in a new millisecond, and the access line's timestamp,
 * formatted once a millisecond at full speed, would be formatted on every call. Takes about 4 minutes a server.
 */

const { values: flags, positionals } = parseArgs({ allowPositionals: true, options: { requests: { type: "string", default: "8000" } } });
const requests = Number(flags.requests);
const concurrency = 8;
const outputs = mkdtempSync(path.join(os.tmpdir(), "axon-instructions-"));
const callgrind = (name: string): string[] => [
  "valgrind",
  "--tool=callgrind",
  "--smc-check=all-non-file",
  "--instr-atstart=no",
  "--separate-threads=yes",
  `--callgrind-out-file=${path.join(outputs, name)}.%p`,
];

async function drive(client: KeepAliveHttpClient, spec: HttpRequestSpec, count: number): Promise<void> {
  const call = client.caller(spec);
  let left = count;
  await Promise.all(Array.from({ length: concurrency }, async () => { while (left-- > 0) await call(); }));
}

/** Warms the server up uncounted, then counts each surface's requests in a dump of its own. */
async function count(name: string, server: ServerProcess<unknown>, port: number): Promise<Record<string, number>> {
  const client = new KeepAliveHttpClient({ host: "127.0.0.1", port }, concurrency);
  const control = (...args: string[]) => execFileSync("callgrind_control", [...args, String(server.pid)], { stdio: "ignore" });
  try {
    for (const spec of Object.values(specs)) await drive(client, spec, 25_000);
    control("--instr=on");
    const counts: Record<string, number> = {};
    for (const [surface, spec] of Object.entries(specs)) {
      control("--zero");
      await drive(client, spec, requests);
      control(`--dump=${surface}`);
      // Files are name.pid.part-thread; thread 01 is the main thread, and the parts are numbered in dump order.
      const part = Object.keys(counts).length + 1;
      const file = readdirSync(outputs).find((entry) => entry.startsWith(`${name}.${server.pid}.${part}-01`))!;
      const totals = /^totals: (\d+)$/m.exec(readFileSync(path.join(outputs, file), "utf8"))!;
      counts[surface] = Number(totals[1]) / requests;
    }
    return counts;
  } finally {
    client.close();
    await server.stop();
  }
}

const rows: [string, Record<string, number>][] = [];
try {
  let canned: CannedResponses | undefined;
  for (const [index, checkout] of (positionals.length > 0 ? positionals : ["."]).entries()) {
    const script = new URL(`file://${path.resolve(checkout, "bench/serve-axon.ts")}`);
    const env = { BENCH_MEMORY_SAMPLER: "off", BENCH_AXON_ENV: JSON.stringify({ LOG_LEVEL: "warn" }) };
    const axon = await startServerProcess<AxonReady>(script, { env, wrapper: callgrind(`axon${index}`) });
    // The baseline answers exactly what the first Axon answered.
    if (canned === undefined) {
      const client = new KeepAliveHttpClient({ host: "127.0.0.1", port: axon.ready.port }, 1);
      canned = await cannedHttpLists(client);
      client.close();
    }
    rows.push([`Axon, ${checkout}`, await count(`axon${index}`, axon, axon.ready.port)]);
  }
  const bare = await startServerProcess<BaselinesReady>(new URL("./serve-baselines.ts", import.meta.url), {
    env: { BENCH_MEMORY_SAMPLER: "off", BENCH_CANNED_RESPONSES: JSON.stringify(canned) },
    wrapper: callgrind("bare"),
  });
  rows.push(["bare node:http, same bytes", await count("bare", bare, bare.ready.httpPort)]);
} finally {
  rmSync(outputs, { recursive: true, force: true });
}

const floor = rows.at(-1)![1];
console.log(`Machine: ${machine()}`);
console.log(`Main-thread instructions per List (callgrind, ${requests} requests a surface after 25,000 uncounted), ${new Date().toISOString()}`);
console.log("");
console.log("| server | REST | ÷ bare | Connect JSON | ÷ bare |");
console.log("| --- | ---: | ---: | ---: | ---: |");
for (const [name, counts] of rows) {
  const cell = (surface: string) => `${Math.round(counts[surface]!).toLocaleString("en")} | ${(counts[surface]! / floor[surface]!).toFixed(2)}×`;
  console.log(`| ${name} | ${cell("rest")} | ${cell("connect")} |`);
}
