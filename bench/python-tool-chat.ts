import { readdirSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { pathToFileURL } from "node:url";
import { chatError } from "./chat-check.js";
import { KeepAliveHttpClient, type HttpRequestSpec } from "./clients.js";
import { percentile } from "./load.js";
import { machine } from "./machine.js";
import type { AxonReady } from "./serve-axon.js";
import type { ScriptedLlmReady } from "./serve-scripted-llm.js";
import { startServerProcess, type ServerProcess } from "./server-process.js";

/*
 * `npm run bench:python-tool-chat [-- --chats 100 --rounds 6 --concurrency 1 --compare /other/checkout]`: a chat whose agent calls one
 * trivial coded tool, the tool in Python (bench/coded_tools/python_bench/trivial.py, run by Axon's Python worker) or
 * in TypeScript (typescript_bench/trivial.ts), end to end: REST StreamingChat against the built server, the scripted LLM
 * of no latency in its own process (2 LLM round trips a chat: the tool call, then the answer). The two networks
 * (bench/networks/tool_language/) differ only in the tool's class. `--concurrency` chats in flight (1 by default); the
 * languages (and the checkouts, with --compare: each serves its own build) alternate round by round. Reports wall per
 * chat and the server's CPU per chat: Axon's process and its Python workers'.
 */

const { values: flags } = parseArgs({
  options: {
    chats: { type: "string", default: "100" },
    rounds: { type: "string", default: "6" },
    warmup: { type: "string", default: "30" },
    concurrency: { type: "string", default: "1" },
    compare: { type: "string", multiple: true },
    // Writes a V8 CPU profile of each Axon process (its threads too) to this folder.
    profile: { type: "string" },
  },
});
const chatsPerRound = Number(flags.chats);
const rounds = Number(flags.rounds);
const warmup = Number(flags.warmup);
const concurrency = Number(flags.concurrency);
if (!(chatsPerRound > 0 && rounds > 0 && concurrency > 0 && warmup >= 0)) {
  throw new Error("--chats, --rounds and --concurrency must be positive, --warmup not negative");
}

const here = path.resolve(import.meta.dirname, "..");
const checkouts = [here, ...(flags.compare ?? []).map((dir) => path.resolve(dir))];
const languages = ["typescript", "python"] as const;
type Language = (typeof languages)[number];
const body = Buffer.from(JSON.stringify({ user_message: { text: "Check 1." }, chat_filter: { chat_filter_type: "MAXIMAL" } }));
const chatOf = (language: Language): HttpRequestSpec => ({
  method: "POST",
  path: `/api/v1/${language}_tool/streaming_chat`,
  headers: { "content-type": "application/json" },
  body,
});

interface Target {
  checkout: string;
  language: Language;
  server: ServerProcess<AxonReady>;
  http: KeepAliveHttpClient;
  messages: number;
  latenciesMs: number[];
  axonCpuMicros: number;
  pythonCpuMicros: number;
}

const processes: ServerProcess<unknown>[] = [];
const clients: KeepAliveHttpClient[] = [];
try {
  const llm = await startServerProcess<ScriptedLlmReady>(new URL("./serve-scripted-llm.ts", import.meta.url));
  processes.push(llm);
  const targets: Target[] = [];
  for (const checkout of checkouts) {
    // Every checkout serves this tree's networks and tools from its own build.
    const server = await startServerProcess<AxonReady>(pathToFileURL(path.join(checkout, "bench", "serve-axon.ts")), {
      env: {
        BENCH_MEMORY_SAMPLER: "off",
        BENCH_AXON_ENV: JSON.stringify({
          AGENT_MANIFEST_FILE: path.join(here, "bench", "networks", "tool_language", "manifest.hocon"),
          AGENT_TOOL_PATH: path.join(here, "bench", "coded_tools"),
          ...(process.env.AXON_PYTHON ? { AXON_PYTHON: process.env.AXON_PYTHON } : {}),
          ...llm.ready.env,
        }),
      },
      nodeArgs: flags.profile ? ["--cpu-prof", `--cpu-prof-dir=${flags.profile}`] : [],
    });
    processes.push(server);
    const http = new KeepAliveHttpClient({ host: "127.0.0.1", port: server.ready.port }, concurrency);
    clients.push(http);
    for (const language of languages) {
      const target: Target = { checkout, language, server, http, messages: await chat(http, language), latenciesMs: [], axonCpuMicros: 0, pythonCpuMicros: 0 };
      // The warm-up, at the same concurrency, leaves the Python workers' start and the JIT out of the figures.
      await runChats(target, warmup, []);
      targets.push(target);
    }
  }

  printHeader(targets);
  for (let round = 0; round < rounds; round++) {
    // A B then B A: whichever runs second in a round gets a warmer machine; alternating cancels that out.
    for (const target of round % 2 === 0 ? targets : [...targets].reverse()) {
      const before = { axon: await target.server.cpuMicros(), python: pythonWorkersCpuMicros(target.server.pid) };
      await runChats(target, chatsPerRound, target.latenciesMs);
      target.axonCpuMicros += (await target.server.cpuMicros()) - before.axon;
      target.pythonCpuMicros += pythonWorkersCpuMicros(target.server.pid) - before.python;
    }
    process.stderr.write(`  round ${round + 1} of ${rounds} done\n`);
  }
  printFigures(targets);
} finally {
  for (const client of clients) client.close();
  await Promise.all(processes.map((child) => child.stop()));
}

/** `count` chats, `concurrency` callers each sending the next as soon as the last is answered: each one's wall time. */
async function runChats(target: Target, count: number, latenciesMs: number[]): Promise<void> {
  let sent = 0;
  const caller = async () => {
    while (sent++ < count) {
      const started = performance.now();
      await chat(target.http, target.language, target.messages);
      latenciesMs.push(performance.now() - started);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, caller));
}

/** One chat; checked to end with the final answer and, after the first, to stream as many messages as the first. */
async function chat(http: KeepAliveHttpClient, language: Language, messages?: number): Promise<number> {
  const reply = await http.send(chatOf(language));
  const lines = reply.body.toString("utf8").split("\n").filter((line) => line !== "");
  const error = chatError(reply.status, lines) ?? (messages === undefined || lines.length === messages ? undefined : `${lines.length} messages, expected ${messages}`);
  if (error) throw new Error(`a ${language} tool chat failed: ${error}`);
  if (messages === undefined && !lines.some((line) => line.includes('"tool_output":"ok"'))) throw new Error(`the ${language} tool did not answer "ok"`);
  return lines.length;
}

/**
 * The CPU time of the Python workers Axon started (its child processes), all their threads, in microseconds: the sum of
 * /proc's schedstat, nanoseconds on CPU, which the clock ticks of /proc/<pid>/stat are too coarse for.
 */
function pythonWorkersCpuMicros(axonPid: number): number {
  let nanoseconds = 0;
  for (const child of childrenOf(axonPid)) {
    try {
      for (const task of readdirSync(`/proc/${child}/task`)) {
        nanoseconds += Number(readFileSync(`/proc/${child}/task/${task}/schedstat`, "utf8").split(" ")[0]);
      }
    } catch {
      // The worker exited meanwhile.
    }
  }
  return nanoseconds / 1000;
}

function childrenOf(pid: number): number[] {
  return readdirSync(`/proc/${pid}/task`).flatMap((task) =>
    readFileSync(`/proc/${pid}/task/${task}/children`, "utf8").split(" ").filter(Boolean).map(Number),
  );
}

function printHeader(targets: Target[]): void {
  const args = process.argv.slice(2).join(" ");
  console.log(`Command: \`npm run bench:python-tool-chat${args ? ` -- ${args}` : ""}\``);
  console.log(`Machine: ${machine()}`);
  console.log(`Load average at start (1 min): ${os.loadavg()[0]!.toFixed(2)}`);
  console.log(
    `Chat: REST StreamingChat, MAXIMAL (${targets[0]!.messages} messages), 2 LLM round trips and one trivial tool call; ` +
      `${rounds} rounds of ${chatsPerRound} chats a target, ${concurrency} in flight, after ${warmup} warm-up chats each`,
  );
  console.log("");
}

function printFigures(targets: Target[]): void {
  const label = (target: Target) => `${checkouts.length > 1 ? `${target.checkout}, ` : ""}${target.language === "python" ? "Python" : "TypeScript"} tool`;
  const chats = rounds * chatsPerRound;
  console.log("| Chat | p50 ms | p90 ms | Axon CPU µs/chat | Python worker CPU µs/chat | server CPU µs/chat |");
  console.log("| --- | ---: | ---: | ---: | ---: | ---: |");
  for (const target of targets) {
    const sorted = [...target.latenciesMs].sort((a, b) => a - b);
    const axon = target.axonCpuMicros / chats;
    const python = target.pythonCpuMicros / chats;
    console.log(
      `| ${label(target)} | ${percentile(sorted, 0.5).toFixed(2)} | ${percentile(sorted, 0.9).toFixed(2)} | ${axon.toFixed(0)} | ${python.toFixed(0)} | ${(axon + python).toFixed(0)} |`,
    );
  }
  console.log("");
  for (const checkout of checkouts) {
    const [typescript, python] = languages.map((language) => targets.find((target) => target.checkout === checkout && target.language === language)!);
    const p50 = (target: Target) => percentile([...target.latenciesMs].sort((a, b) => a - b), 0.5);
    const cpu = (target: Target) => (target.axonCpuMicros + target.pythonCpuMicros) / chats;
    console.log(
      `${checkouts.length > 1 ? `${checkout}: ` : ""}Python − TypeScript: +${(p50(python!) - p50(typescript!)).toFixed(2)} ms at p50, ` +
        `+${(cpu(python!) - cpu(typescript!)).toFixed(0)} µs of server CPU a chat`,
    );
  }
  console.log(`Load average at end (1 min): ${os.loadavg()[0]!.toFixed(2)}`);
}
