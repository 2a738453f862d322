import os from "node:os";
import { parseArgs } from "node:util";
import { chatError } from "./chat-check.js";
import { KeepAliveHttpClient, type HttpRequestSpec } from "./clients.js";
import { percentile, runLoad, runUntil, type Call, type LoadResult } from "./load.js";
import { machine } from "./machine.js";
import type { AxonReady } from "./serve-axon.js";
import type { ChatBaselineReady, ChatBaselineScript } from "./serve-chat-baseline.js";
import type { ScriptedLlmReady, ScriptedLlmTraffic } from "./serve-scripted-llm.js";
import { startServerProcess, type ServerProcess, type ServerSample } from "./server-process.js";

/*
 * `npm run bench:chat`: StreamingChat over REST on a three-node network (front man -> LLM sub-agent -> coded tool)
 * against a zero-latency scripted LLM, MAXIMAL so every message is built and sent (`--filter MINIMAL`: only the final
 * answer is). Axon is compared in the same run with a bare server that makes the same LLM round trips through the
 * same SDK and answers the same bytes:
 *   1. per-chat and per-message overhead at a low, fixed concurrency;
 *   2. 200 chats in flight on one Axon process: latency percentiles, throughput, memory, errors;
 *   3. with --settle, the memory each process comes back to once the crowd has gone; with --soak, whether memory
 *      grows over many chats (RSS sampled every N chats, and the slope of a straight line through the samples).
 * Axon, the baseline and the scripted LLM each run in their own process. Prints Markdown for docs/benchmarks.md.
 */

const { values: flags } = parseArgs({
  options: {
    seconds: { type: "string", default: "4" },
    warmup: { type: "string", default: "1" },
    rounds: { type: "string", default: "3" },
    concurrency: { type: "string", default: "1" },
    crowd: { type: "string", default: "200" },
    "crowd-seconds": { type: "string", default: "8" },
    "crowd-warmup": { type: "string", default: "2" },
    "crowd-rounds": { type: "string", default: "2" },
    // After the crowd: both processes left idle this long, RSS sampled every few seconds (0: skipped).
    settle: { type: "string", default: "0" },
    // A soak: --soak-chats chats at the crowd's concurrency on each process, RSS sampled every --soak chats (0: skipped).
    soak: { type: "string", default: "0" },
    "soak-chats": { type: "string", default: "20000" },
    // Chats at the crowd's concurrency on each server before anything is measured, so that both are measured with
    // their code compiled (Axon has more of it to compile than the baseline).
    "jit-warmup": { type: "string", default: "10" },
    // MAXIMAL streams every message; MINIMAL only the final answer (the thread still runs the whole chat).
    filter: { type: "string", default: "MAXIMAL" },
    // Writes V8 CPU profiles of the Axon process to DIR/axon and of the baseline to DIR/baseline (open them in
    // Chrome DevTools or speedscope).
    profile: { type: "string" },
  },
});
type NumericFlag = Exclude<keyof typeof flags, "profile" | "filter">;
function positive(flag: NumericFlag): number {
  const value = Number(flags[flag]);
  if (!(value > 0)) throw new Error(`--${flag} must be a positive number, got ${flags[flag]}`);
  return value;
}
function nonNegative(flag: NumericFlag): number {
  const value = Number(flags[flag]);
  if (!(value >= 0)) throw new Error(`--${flag} must be 0 or more, got ${flags[flag]}`);
  return value;
}
const overheadLoad = { durationMs: positive("seconds") * 1000, warmupMs: positive("warmup") * 1000, concurrency: positive("concurrency") };
const crowdLoad = {
  durationMs: positive("crowd-seconds") * 1000,
  warmupMs: positive("crowd-warmup") * 1000,
  concurrency: positive("crowd"),
};
const rounds = { overhead: positive("rounds"), crowd: positive("crowd-rounds") };
const settleSeconds = nonNegative("settle");
const soak = { every: nonNegative("soak"), chats: positive("soak-chats") };
/** How often RSS is sampled while both processes settle. */
const settleSampleMs = 5_000;
const jitWarmupMs = Number(flags["jit-warmup"]) * 1000;
if (!(jitWarmupMs >= 0)) throw new Error(`--jit-warmup must be a number of seconds, got ${flags["jit-warmup"]}`);
const filter = flags.filter;
if (filter !== "MAXIMAL" && filter !== "MINIMAL") throw new Error(`--filter must be MAXIMAL or MINIMAL, got ${filter}`);
const profileArgs = (name: string): string[] => (flags.profile ? ["--cpu-prof", `--cpu-prof-dir=${flags.profile}/${name}`] : []);

const network = "three_node";
const chatRequest: HttpRequestSpec = {
  method: "POST",
  path: `/api/v1/${network}/streaming_chat`,
  headers: { "content-type": "application/json" },
  body: Buffer.from(JSON.stringify({ user_message: { text: "What do benchmarks do?" }, chat_filter: { chat_filter_type: filter } })),
};

type Target = "Axon" | "baseline";
const targets: Target[] = ["Axon", "baseline"];
interface Measured extends LoadResult {
  serverCpuMicros: number;
  llmCpuMicros: number;
  /** LLM calls received during the measured run (the warm-up has drained before it starts). */
  llmRequests: number;
  /** The server's sample after the run; its heap peak covers warm-up and run. */
  after: ServerSample;
}

const processes: ServerProcess<unknown>[] = [];
const closers: (() => void)[] = [];
try {
  const llm = await startServerProcess<ScriptedLlmReady>(new URL("./serve-scripted-llm.ts", import.meta.url));
  processes.push(llm);
  const axon = await startServerProcess<AxonReady>(new URL("./serve-axon.ts", import.meta.url), {
    env: {
      BENCH_AXON_ENV: JSON.stringify({
        AGENT_MANIFEST_FILE: "bench/networks/manifest.hocon",
        AGENT_TOOL_PATH: "bench/coded_tools",
        ...llm.ready.env,
      }),
    },
    nodeArgs: profileArgs("axon"),
  });
  processes.push(axon);
  // Right after the start, before any chat: what an idle server that nobody has used yet holds.
  const started = await axon.sample();
  const axonHttp = new KeepAliveHttpClient({ host: "127.0.0.1", port: axon.ready.port }, crowdLoad.concurrency);
  closers.push(() => axonHttp.close());

  // One chat first: what Axon streams and which LLM calls it makes become the baseline's script and every
  // later chat's check.
  await llm.sample();
  const probe = await axonHttp.send(chatRequest);
  const lines = probe.body.toString("utf8").split("\n").filter((line) => line !== "");
  const probeError = chatError(probe.status, lines);
  if (probeError) throw new Error(`the probe chat failed: ${probeError}\n${probe.body.toString().slice(0, 2000)}`);
  const traffic = (await llm.sample()).extra as ScriptedLlmTraffic;
  if (traffic.received !== traffic.first.length || traffic.first.some((request) => request.status !== 200)) {
    const statuses = JSON.stringify(traffic.first.map((request) => request.status));
    throw new Error(`the probe chat made ${traffic.received} LLM calls (the first answered ${statuses}); the baseline replays up to 8, all answered`);
  }
  const shape = { messages: lines.length, llmRoundTrips: traffic.received, responseBytes: probe.body.length };

  const script: ChatBaselineScript = {
    path: chatRequest.path,
    contentType: probe.contentType,
    responseBase64: probe.body.toString("base64"),
    llmRequests: traffic.first.map((request) => request.body),
    llmEnv: llm.ready.env,
  };
  const baseline = await startServerProcess<ChatBaselineReady>(new URL("./serve-chat-baseline.ts", import.meta.url), {
    env: { BENCH_CHAT_BASELINE: JSON.stringify(script) },
    nodeArgs: profileArgs("baseline"),
  });
  processes.push(baseline);
  const baselineHttp = new KeepAliveHttpClient({ host: "127.0.0.1", port: baseline.ready.port }, crowdLoad.concurrency);
  closers.push(() => baselineHttp.close());

  const servers: Record<Target, ServerProcess<unknown>> = { Axon: axon, baseline };
  const calls: Record<Target, Call> = { Axon: chatCaller(axonHttp, shape.messages), baseline: chatCaller(baselineHttp, shape.messages) };
  const idle = { Axon: await axon.sample(), baseline: await baseline.sample() };

  const measure = async (target: Target, load: typeof overheadLoad, label: string): Promise<Measured> => {
    const server = servers[target];
    let before: ServerSample | undefined;
    let llmBefore: ServerSample | undefined;
    await server.sample(); // starts the peak-heap window, so the peak covers the warm-up as well
    const result = await runLoad(calls[target], {
      ...load,
      beforeMeasuring: async () => {
        before = await server.sample();
        llmBefore = await llm.sample();
      },
    });
    const after = await server.sample();
    const llmAfter = await llm.sample();
    const rate = Math.round(result.requests / result.seconds);
    process.stderr.write(`  ${label} ${target}: ${rate} chats/s, ${result.errors} errors\n`);
    return {
      ...result,
      serverCpuMicros: after.cpuMicros - before!.cpuMicros,
      llmCpuMicros: llmAfter.cpuMicros - llmBefore!.cpuMicros,
      llmRequests: (llmAfter.extra as ScriptedLlmTraffic).received,
      after,
    };
  };
  // A B then B A: whichever runs second in a round gets a warmer machine; alternating cancels that out.
  const alternate = async (count: number, load: typeof overheadLoad, label: string) => {
    const runs: Record<Target, Measured[]> = { Axon: [], baseline: [] };
    for (let round = 0; round < count; round++) {
      for (const target of round % 2 === 0 ? targets : [...targets].reverse()) {
        runs[target].push(await measure(target, load, `${label} round ${round + 1}`));
      }
    }
    return runs;
  };

  printHeader(shape);
  if (jitWarmupMs > 0) {
    for (const target of targets) await runUntil(calls[target], crowdLoad.concurrency, AbortSignal.timeout(jitWarmupMs));
  }
  const overhead = await alternate(rounds.overhead, overheadLoad, `${overheadLoad.concurrency} in flight`);
  const crowd = await alternate(rounds.crowd, crowdLoad, `${crowdLoad.concurrency} in flight`);
  const settled = settleSeconds > 0 ? await settleAll(servers) : undefined;
  const soaked = soak.every > 0 ? { Axon: await soakOne(servers.Axon, calls.Axon), baseline: await soakOne(servers.baseline, calls.baseline) } : undefined;
  // Where the soak leaves each process once it has rested as long: what it kept, not what awaits collection.
  const soakSettled = soaked && settleSeconds > 0 ? await settleAll(servers) : undefined;
  printOverhead(overhead, shape);
  console.log("");
  printCrowd(crowd, idle);
  console.log("");
  if (settled) {
    printSettle(settled, idle, crowd, started);
    console.log("");
  }
  if (soaked) {
    printSoak(soaked, soakSettled);
    console.log("");
  }
  console.log(`Load average at end (1 min): ${os.loadavg()[0]!.toFixed(2)}`);
} finally {
  for (const close of closers) close();
  await Promise.all(processes.map((child) => child.stop()));
}

/** Both processes idle side by side for --settle seconds; each one's RSS every few seconds. */
async function settleAll(servers: Record<Target, ServerProcess<unknown>>): Promise<Record<Target, { seconds: number; rssBytes: number }[]>> {
  process.stderr.write(`  settling ${settleSeconds} s\n`);
  const samples: Record<Target, { seconds: number; rssBytes: number }[]> = { Axon: [], baseline: [] };
  const start = performance.now();
  for (;;) {
    const seconds = (performance.now() - start) / 1000;
    for (const target of targets) samples[target].push({ seconds, rssBytes: (await servers[target].sample()).rssBytes });
    if (seconds >= settleSeconds) return samples;
    await new Promise((resolve) => setTimeout(resolve, Math.min(settleSampleMs, (settleSeconds - seconds) * 1000)));
  }
}

interface Soak {
  /** RSS after every --soak chats (the first at 0). */
  samples: { chats: number; rssBytes: number }[];
  chats: number;
  errors: number;
  seconds: number;
}

/** --soak-chats chats at the crowd's concurrency; the server's RSS every --soak of them. */
async function soakOne(server: ServerProcess<unknown>, call: Call): Promise<Soak> {
  const samples = [{ chats: 0, rssBytes: (await server.sample()).rssBytes }];
  const stop = new AbortController();
  let sent = 0;
  let done = 0;
  const sampling: Promise<void>[] = [];
  const counted: Call = async () => {
    if (++sent >= soak.chats) stop.abort();
    try {
      await call();
    } finally {
      done++;
      if (done % soak.every === 0) {
        const chats = done;
        sampling.push(server.sample().then(({ rssBytes }) => void samples.push({ chats, rssBytes })));
      }
    }
  };
  const result = await runUntil(counted, crowdLoad.concurrency, stop.signal);
  await Promise.all(sampling);
  process.stderr.write(`  soak: ${result.requests} chats in ${result.seconds.toFixed(0)} s, ${result.errors} errors\n`);
  return { samples: samples.sort((a, b) => a.chats - b.chats), chats: result.requests, errors: result.errors, seconds: result.seconds };
}

/** A chat succeeded when it streamed as many messages as the probe did and ended with the final answer. */
function chatCaller(client: KeepAliveHttpClient, messages: number): Call {
  return async () => {
    const reply = await client.send(chatRequest);
    const lines = reply.body.toString("utf8").split("\n").filter((line) => line !== "");
    const error = chatError(reply.status, lines) ?? (lines.length === messages ? undefined : `${lines.length} messages, expected ${messages}`);
    if (error) throw new Error(error);
  };
}

function printHeader(shape: { messages: number; llmRoundTrips: number; responseBytes: number }): void {
  const args = process.argv.slice(2).join(" ");
  console.log(`Command: \`npm run bench:chat${args ? ` -- ${args}` : ""}\``);
  console.log(`Date: ${new Date().toISOString()}`);
  console.log(`Machine: ${machine()}`);
  // Other work on the machine takes cores from every process here; the load average before and after shows if there was any.
  console.log(`Load average at start (1 min): ${os.loadavg()[0]!.toFixed(2)}`);
  console.log(
    `Chat: \`POST ${chatRequest.path}\`, ${filter}: ${shape.messages} messages (${shape.responseBytes} B of json-lines), ` +
      `${shape.llmRoundTrips} LLM round trips`,
  );
  console.log(
    `Warm-up: ${flags["jit-warmup"]} s of ${crowdLoad.concurrency} chats in flight on each server before the first measurement; then ` +
      `per-message overhead ${overheadLoad.concurrency} chat(s) in flight, ${flags.warmup} s warm-up + ${flags.seconds} s measured, ` +
      `${rounds.overhead} rounds; crowd ${crowdLoad.concurrency} chats in flight (${crowdLoad.concurrency} keep-alive sockets), ` +
      `${flags["crowd-warmup"]} s warm-up + ${flags["crowd-seconds"]} s measured, ${rounds.crowd} rounds; Axon and baseline alternate`,
  );
  console.log("");
}

function combine(runs: Measured[]) {
  const seconds = sum(runs.map((run) => run.seconds));
  const chats = sum(runs.map((run) => run.requests));
  const latencies = runs.flatMap((run) => run.latenciesMs).sort((a, b) => a - b);
  const serverCpuMicros = sum(runs.map((run) => run.serverCpuMicros));
  return {
    chatsPerSecond: chats / seconds,
    perRound: runs.map((run) => run.requests / run.seconds),
    p50: percentile(latencies, 0.5),
    p90: percentile(latencies, 0.9),
    p99: percentile(latencies, 0.99),
    max: latencies.at(-1) ?? Number.NaN,
    cpuMicrosPerChat: serverCpuMicros / chats,
    serverCores: serverCpuMicros / 1e6 / seconds,
    llmCores: sum(runs.map((run) => run.llmCpuMicros)) / 1e6 / seconds,
    llmRoundTripsPerChat: sum(runs.map((run) => run.llmRequests)) / sum(runs.map((run) => run.requests + run.errors)),
    clientCores: sum(runs.map((run) => run.clientCores * run.seconds)) / seconds,
    errors: sum(runs.map((run) => run.errors)),
    maxRssBytes: Math.max(...runs.map((run) => run.after.maxRssBytes)),
    peakHeapUsedBytes: Math.max(...runs.map((run) => run.after.peakHeapUsedBytes)),
  };
}

function printOverhead(runs: Record<Target, Measured[]>, shape: { messages: number }): void {
  const axon = combine(runs.Axon);
  const baseline = combine(runs.baseline);
  console.log(`Per-message overhead, ${overheadLoad.concurrency} chat(s) in flight:`);
  console.log("");
  console.log(
    "| Server | chats/s (per round) | p50 ms | p90 ms | p99 ms | messages/chat | LLM calls/chat | server CPU µs/chat | server CPU µs/message | server cores | LLM cores | client cores | errors |",
  );
  console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const [name, figures] of [["Axon", axon], ["bare node:http + openai SDK", baseline]] as const) {
    console.log(
      `| ${name} | ${rate(figures)} | ${ms(figures.p50)} | ${ms(figures.p90)} | ${ms(figures.p99)} | ${shape.messages} | ` +
        `${figures.llmRoundTripsPerChat.toFixed(2)} | ${figures.cpuMicrosPerChat.toFixed(0)} | ${(figures.cpuMicrosPerChat / shape.messages).toFixed(0)} | ` +
        `${figures.serverCores.toFixed(2)} | ${figures.llmCores.toFixed(2)} | ${figures.clientCores.toFixed(2)} | ${figures.errors} |`,
    );
  }
  const extraCpu = axon.cpuMicrosPerChat - baseline.cpuMicrosPerChat;
  console.log("");
  console.log("| Axon − baseline | p50 latency | p99 latency | server CPU per chat | server CPU per message | Axon / baseline CPU per chat |");
  console.log("| --- | ---: | ---: | ---: | ---: | ---: |");
  console.log(
    `| per chat of ${shape.messages} messages | +${ms(axon.p50 - baseline.p50)} ms | +${ms(axon.p99 - baseline.p99)} ms | ` +
      `+${extraCpu.toFixed(0)} µs | +${(extraCpu / shape.messages).toFixed(0)} µs | ${(axon.cpuMicrosPerChat / baseline.cpuMicrosPerChat).toFixed(2)}× |`,
  );
}

function printCrowd(runs: Record<Target, Measured[]>, idle: Record<Target, ServerSample>): void {
  console.log(`${crowdLoad.concurrency} chats in flight on one process:`);
  console.log("");
  console.log(
    "| Server | chats/s (per round) | p50 ms | p90 ms | p99 ms | max ms | server CPU µs/chat | server cores | LLM cores | client cores | RSS idle → peak MB | heap used idle → peak MB | errors |",
  );
  console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const [target, name] of [["Axon", "Axon"], ["baseline", "bare node:http + openai SDK"]] as const) {
    const figures = combine(runs[target]);
    console.log(
      `| ${name} | ${rate(figures)} | ${ms(figures.p50)} | ${ms(figures.p90)} | ${ms(figures.p99)} | ${ms(figures.max)} | ` +
        `${figures.cpuMicrosPerChat.toFixed(0)} | ${figures.serverCores.toFixed(2)} | ${figures.llmCores.toFixed(2)} | ${figures.clientCores.toFixed(2)} | ` +
        `${mb(idle[target].rssBytes)} → ${mb(figures.maxRssBytes)} | ${mb(idle[target].heapUsedBytes)} → ${mb(figures.peakHeapUsedBytes)} | ${figures.errors} |`,
    );
  }
}

function printSettle(
  settled: Record<Target, { seconds: number; rssBytes: number }[]>,
  idle: Record<Target, ServerSample>,
  crowd: Record<Target, Measured[]>,
  started: ServerSample,
): void {
  console.log(`RSS once the crowd has gone (both processes idle ${settleSeconds} s, sampled every ${settleSampleMs / 1000} s):`);
  console.log("");
  console.log("| Server | RSS at start MB | idle (after one chat) MB | peak MB | right after MB | after settling MB | after settling / idle |");
  console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const [target, name] of [["Axon", "Axon"], ["baseline", "bare node:http + openai SDK"]] as const) {
    const samples = settled[target];
    const last = samples.at(-1)!.rssBytes;
    const atStart = target === "Axon" ? mb(started.rssBytes) : "–";
    console.log(
      `| ${name} | ${atStart} | ${mb(idle[target].rssBytes)} | ${mb(combine(crowd[target]).maxRssBytes)} | ${mb(samples[0]!.rssBytes)} | ${mb(last)} | ` +
        `${(last / idle[target].rssBytes).toFixed(2)}× |`,
    );
  }
}

function printSoak(soaked: Record<Target, Soak>, settled: Record<Target, { rssBytes: number }[]> | undefined): void {
  console.log(`Soak: ${soak.chats} chats, ${crowdLoad.concurrency} in flight, RSS every ${soak.every} chats:`);
  console.log("");
  const rested = settled ? ` then ${settleSeconds} s idle` : "";
  console.log(`| Server | chats/s | errors | RSS idle → first → last${rested} MB | min – max under load MB | slope MB per 1,000 chats | RSS samples MB |`);
  console.log("| --- | ---: | ---: | ---: | ---: | ---: | --- |");
  for (const [target, name] of [["Axon", "Axon"], ["baseline", "bare node:http + openai SDK"]] as const) {
    const { samples, chats, errors, seconds } = soaked[target];
    const rss = samples.map((sample) => sample.rssBytes);
    const underLoad = rss.slice(1);
    console.log(
      `| ${name} | ${(chats / seconds).toFixed(0)} | ${errors} | ${mb(rss[0]!)} → ${mb(underLoad[0]!)} → ${mb(rss.at(-1)!)}${settled ? ` → ${mb(settled[target].at(-1)!.rssBytes)}` : ""} | ` +
        `${mb(Math.min(...underLoad))} – ${mb(Math.max(...underLoad))} | ` +
        `${((slope(samples) * 1000) / 1024 / 1024).toFixed(2)} | ${rss.map(mb).join(" ")} |`,
    );
  }
}

/**
 * Least-squares slope of RSS over chats, in bytes per chat, from the first sample under load on: the one before the
 * first chat is the idle process, whose step up to a crowd's working set is no growth.
 */
function slope(all: { chats: number; rssBytes: number }[]): number {
  const samples = all.filter((sample) => sample.chats > 0);
  const meanX = sum(samples.map((sample) => sample.chats)) / samples.length;
  const meanY = sum(samples.map((sample) => sample.rssBytes)) / samples.length;
  const covariance = sum(samples.map((sample) => (sample.chats - meanX) * (sample.rssBytes - meanY)));
  const variance = sum(samples.map((sample) => (sample.chats - meanX) ** 2));
  return variance === 0 ? 0 : covariance / variance;
}

function rate(figures: { chatsPerSecond: number; perRound: number[] }): string {
  return `${figures.chatsPerSecond.toFixed(0)} (${figures.perRound.map((value) => value.toFixed(0)).join(", ")})`;
}

function ms(value: number): string {
  return value.toFixed(2);
}

function mb(bytes: number): string {
  return (bytes / 1024 / 1024).toFixed(0);
}

function sum(values: number[]): number {
  return values.reduce((total, value) => total + value, 0);
}
