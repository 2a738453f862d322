import path from "node:path";
import { parseArgs } from "node:util";
import { KeepAliveHttpClient } from "./clients.js";
import { cannedHttpLists, httpLists as specs } from "./http-lists.js";
import { runLoad } from "./load.js";
import { machine } from "./machine.js";
import type { AxonReady } from "./serve-axon.js";
import type { BaselinesReady } from "./serve-baselines.js";
import { startServerProcess, type ServerProcess } from "./server-process.js";

/*
 * `npx tsx bench/http-checkouts.ts [--rounds N] [--surfaces rest,connect] checkout[|{"ENV":"value"}]…`: the server CPU
 * per REST and Connect JSON List of several builds side by side (this one, a build of an earlier commit, the same
 * build with other settings), against bare node:http in the same rounds, each target warmed up for 4 s, then short
 * rounds alternating their order. What `npm run bench` cannot tell apart (a few µs a call) shows here in the median
 * of enough rounds. Each checkout needs its own dist/ (`npx tsx scripts/build.ts` in it).
 */

const { values: flags, positionals } = parseArgs({
  allowPositionals: true,
  options: { rounds: { type: "string", default: "5" }, surfaces: { type: "string", default: "rest,connect" } },
});
const surfaces = flags.surfaces.split(",").filter((name) => name in specs);
const serverEnv = { BENCH_MEMORY_SAMPLER: "off" };

interface Target {
  name: string;
  process: ServerProcess<unknown>;
  client: KeepAliveHttpClient;
}
const targets: Target[] = [];
try {
  for (const argument of positionals.length > 0 ? positionals : ["."]) {
    const [checkout, env] = argument.split("|") as [string, string | undefined];
    const script = new URL(`file://${path.resolve(checkout, "bench/serve-axon.ts")}`);
    const server = await startServerProcess<AxonReady>(script, { env: { ...serverEnv, ...(env === undefined ? {} : (JSON.parse(env) as Record<string, string>)) } });
    targets.push({ name: argument, process: server, client: new KeepAliveHttpClient({ host: "127.0.0.1", port: server.ready.port }, 32) });
  }
  // The baseline answers exactly what the first checkout answered.
  const canned = await cannedHttpLists(targets[0]!.client);
  const bare = await startServerProcess<BaselinesReady>(new URL("./serve-baselines.ts", import.meta.url), { env: { ...serverEnv, BENCH_CANNED_RESPONSES: JSON.stringify(canned) } });
  targets.push({ name: "bare node:http, same bytes", process: bare, client: new KeepAliveHttpClient({ host: "127.0.0.1", port: bare.ready.httpPort }, 32) });

  const options = { concurrency: 32, warmupMs: 500, durationMs: 2000 };
  for (const target of targets) for (const surface of surfaces) await runLoad(target.client.caller(specs[surface]!), { ...options, warmupMs: 4000, durationMs: 10 });
  const micros = new Map<string, number[]>();
  for (let round = 0; round < Number(flags.rounds); round++) {
    for (const surface of surfaces) {
      for (const target of round % 2 === 0 ? targets : [...targets].reverse()) {
        let before = 0;
        const load = await runLoad(target.client.caller(specs[surface]!), { ...options, beforeMeasuring: async () => void (before = await target.process.cpuMicros()) });
        if (load.errors > 0) throw new Error(`${target.name} answered ${load.errors} ${surface} calls with an error`);
        const key = `${surface}|${target.name}`;
        micros.set(key, [...(micros.get(key) ?? []), ((await target.process.cpuMicros()) - before) / load.requests]);
      }
    }
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  console.log(`Machine: ${machine()}`);
  console.log(`${flags.rounds} rounds, ${new Date().toISOString()}`);
  console.log("");
  console.log("| surface | server | CPU µs per List, median | ÷ bare node:http | per round |");
  console.log("| --- | --- | ---: | ---: | --- |");
  for (const surface of surfaces) {
    const floor = median(micros.get(`${surface}|${targets.at(-1)!.name}`)!);
    for (const target of targets) {
      const figures = micros.get(`${surface}|${target.name}`)!;
      console.log(`| ${surface} | ${target.name} | ${median(figures).toFixed(1)} | ${(median(figures) / floor).toFixed(2)}× | ${figures.map((value) => value.toFixed(0)).join(", ")} |`);
    }
  }
} finally {
  for (const target of targets) target.client.close();
  await Promise.all(targets.map((target) => target.process.stop()));
}
