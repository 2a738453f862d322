import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { KeepAliveHttpClient, type HttpRequestSpec } from "./clients.js";
import { percentile, runLoad, type Call } from "./load.js";
import { machine } from "./machine.js";
import type { AxonReady } from "./serve-axon.js";
import type { UpstreamReady } from "./serve-inference-upstream.js";
import { startServerProcess, type ServerProcess } from "./server-process.js";

/*
 * `npm run bench:inference`: a chat completion called three ways in the same run, against an upstream that answers
 * from bytes made once: directly, through a bare node:http relay (serve-bare-relay.ts), and through Axon's /v1 as a
 * brokered model (authenticated, decided by the built-in policy, admitted, relayed, its tokens counted and audited).
 *   1. latency: one call at a time, not streamed; p50 added over the direct call, Axon's against the relay's;
 *   2. CPU per streamed chunk: streamed calls (usage asked for) at a fixed concurrency; each server's CPU over the
 *      chunks it relayed, Axon's against the relay's.
 * Each server runs in its own process; rounds alternate the targets. Prints Markdown for docs/benchmarks.md.
 */

const { values: flags } = parseArgs({
  options: {
    seconds: { type: "string", default: "4" },
    warmup: { type: "string", default: "1" },
    rounds: { type: "string", default: "3" },
    concurrency: { type: "string", default: "8" },
    chunks: { type: "string", default: "100" },
    // Writes a V8 CPU profile of the Axon process to this folder (open it in Chrome DevTools or speedscope).
    profile: { type: "string" },
  },
});
const positive = (flag: Exclude<keyof typeof flags, "profile">): number => {
  const value = Number(flags[flag]);
  if (!(value > 0)) throw new Error(`--${flag} must be a positive number, got ${flags[flag]}`);
  return value;
};
const load = { durationMs: positive("seconds") * 1000, warmupMs: positive("warmup") * 1000 };
const rounds = positive("rounds");
const concurrency = positive("concurrency");
const chunkCount = positive("chunks");
const model = "bench/model";
const clientSecret = "bench-client-secret-0123456789abcdef0123456789";

const request = (stream: boolean, token?: string): HttpRequestSpec => ({
  method: "POST",
  path: "/v1/chat/completions",
  headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
  body: Buffer.from(
    JSON.stringify({ model, messages: [{ role: "user", content: "Say a hundred words." }], max_tokens: 200, ...(stream ? { stream, stream_options: { include_usage: true } } : {}) }),
  ),
});

/** A call that fails unless the answer is whole: a JSON completion, or a stream ending in [DONE]. */
function caller(client: KeepAliveHttpClient, spec: HttpRequestSpec, stream: boolean): Call {
  return async () => {
    const reply = await client.send(spec);
    if (reply.status !== 200) throw new Error(`HTTP ${reply.status}: ${reply.body.toString().slice(0, 200)}`);
    if (stream && !reply.body.subarray(-14).equals(Buffer.from("data: [DONE]\n\n"))) throw new Error("a stream that did not end with [DONE]");
  };
}

type Target = "direct" | "bare relay" | "Axon";
const processes: ServerProcess<unknown>[] = [];
const args = process.argv.slice(2).join(" ");
console.log(`Command: \`npm run bench:inference${args ? ` -- ${args}` : ""}\``);
console.log(`Date: ${new Date().toISOString()}`);
console.log(`Machine: ${machine()}`);
// Other work on the machine takes cores from every process here; the load average before and after shows if there was any.
console.log(`Load average at start (1 min): ${os.loadavg()[0]!.toFixed(2)}`);
try {
  const upstream = await startServerProcess<UpstreamReady>(new URL("./serve-inference-upstream.ts", import.meta.url), { env: { BENCH_CHUNKS: String(chunkCount) } });
  processes.push(upstream);
  const relay = await startServerProcess<{ port: number }>(new URL("./serve-bare-relay.ts", import.meta.url), {
    env: { BENCH_UPSTREAM_PORT: String(upstream.ready.port), BENCH_UPSTREAM_KEY: upstream.ready.key, BENCH_MEMORY_SAMPLER: "off" },
  });
  processes.push(relay);
  const files = mkdtempSync(path.join(os.tmpdir(), "axon-bench-inference-"));
  writeFileSync(path.join(files, "clients"), `bench = ${clientSecret}\n`, { mode: 0o600 });
  writeFileSync(path.join(files, "inference.hocon"), JSON.stringify({ bench: { base_url: `http://127.0.0.1:${upstream.ready.port}/v1`, secret_env: "BENCH_HF_TOKEN", models: ["bench/*"] } }));
  writeFileSync(path.join(files, "admission.json"), JSON.stringify({ inference_requests_per_window: 1_000_000, inference_in_flight: 1000 }));
  const axon = await startServerProcess<AxonReady>(new URL("./serve-axon.ts", import.meta.url), {
    env: {
      BENCH_MEMORY_SAMPLER: "off",
      BENCH_AXON_ENV: JSON.stringify({
        AXON_CLIENTS_FILE: path.join(files, "clients"),
        AXON_INFERENCE_FILE: path.join(files, "inference.hocon"),
        AXON_ADMISSION_FILE: path.join(files, "admission.json"),
        BENCH_HF_TOKEN: upstream.ready.key,
      }),
    },
    nodeArgs: flags.profile ? ["--cpu-prof", `--cpu-prof-dir=${flags.profile}`] : [],
  });
  processes.push(axon);

  const ports: Record<Target, number> = { direct: upstream.ready.port, "bare relay": relay.ready.port, Axon: axon.ready.port };
  const servers: Partial<Record<Target, ServerProcess<unknown>>> = { "bare relay": relay, Axon: axon };
  const tokenOf = (target: Target) => (target === "direct" ? upstream.ready.key : target === "Axon" ? clientSecret : undefined);

  // 1. Latency, one call at a time.
  const latency: Record<Target, number[]> = { direct: [], "bare relay": [], Axon: [] };
  for (let round = 0; round < rounds; round++) {
    for (const target of Object.keys(ports) as Target[]) {
      const client = new KeepAliveHttpClient({ host: "127.0.0.1", port: ports[target] }, 1);
      const result = await runLoad(caller(client, request(false, tokenOf(target)), false), { ...load, concurrency: 1 });
      latency[target].push(percentile(result.latenciesMs, 0.5));
      client.close();
    }
  }

  // 2. CPU per streamed chunk, at a fixed concurrency.
  const cpu: Record<"bare relay" | "Axon", { perChunk: number[]; p50: number[]; calls: number }> = {
    "bare relay": { perChunk: [], p50: [], calls: 0 },
    Axon: { perChunk: [], p50: [], calls: 0 },
  };
  for (let round = 0; round < rounds; round++) {
    for (const target of ["bare relay", "Axon"] as const) {
      const server = servers[target]!;
      const client = new KeepAliveHttpClient({ host: "127.0.0.1", port: ports[target] }, concurrency);
      let before = 0;
      const result = await runLoad(caller(client, request(true, tokenOf(target)), true), {
        ...load,
        concurrency,
        beforeMeasuring: async () => void (before = await server.cpuMicros()),
      });
      // Calls still answering when the run ended finish before the sample: count them as the run's.
      const used = (await server.cpuMicros()) - before;
      cpu[target].perChunk.push(used / (result.requests * chunkCount));
      cpu[target].p50.push(percentile(result.latenciesMs, 0.5));
      cpu[target].calls += result.requests;
      client.close();
    }
  }

  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  const p50 = { direct: median(latency.direct), relay: median(latency["bare relay"]), axon: median(latency.Axon) };
  const added = { relay: p50.relay - p50.direct, axon: p50.axon - p50.direct };
  const perChunk = { relay: median(cpu["bare relay"].perChunk), axon: median(cpu.Axon.perChunk) };
  const f = (value: number, digits = 3) => value.toFixed(digits);
  console.log(`\n### Brokered chat completions (median of ${rounds} rounds, ${chunkCount} chunks a stream, ${concurrency} streams at once)\n`);
  console.log("| figure | direct | bare relay | Axon | Axon ÷ relay |");
  console.log("| --- | --- | --- | --- | --- |");
  console.log(`| p50 latency, not streamed (ms) | ${f(p50.direct)} | ${f(p50.relay)} | ${f(p50.axon)} | |`);
  console.log(`| p50 added over direct (ms) | | ${f(added.relay)} | ${f(added.axon)} | **${f(added.axon / added.relay, 2)}×** |`);
  console.log(`| server CPU per streamed chunk (µs) | | ${f(perChunk.relay, 2)} | ${f(perChunk.axon, 2)} | **${f(perChunk.axon / perChunk.relay, 2)}×** |`);
  console.log(`| server CPU per streamed call (µs) | | ${f(perChunk.relay * chunkCount, 0)} | ${f(perChunk.axon * chunkCount, 0)} | |`);
  console.log(`| p50 streamed call, to [DONE] (ms) | | ${f(median(cpu["bare relay"].p50))} | ${f(median(cpu.Axon.p50))} | |`);
  console.log(`\nRounds: latency p50 (ms) direct ${latency.direct.map((v) => f(v)).join(", ")}; relay ${latency["bare relay"].map((v) => f(v)).join(", ")}; Axon ${latency.Axon.map((v) => f(v)).join(", ")}.`);
  console.log(`CPU per chunk (µs) relay ${cpu["bare relay"].perChunk.map((v) => f(v, 2)).join(", ")}; Axon ${cpu.Axon.perChunk.map((v) => f(v, 2)).join(", ")}; streamed calls measured: relay ${cpu["bare relay"].calls}, Axon ${cpu.Axon.calls}.`);
  console.log(`Load average at the end (1 min): ${os.loadavg()[0]!.toFixed(2)}`);
} finally {
  await Promise.all(processes.map((server) => server.stop()));
}
