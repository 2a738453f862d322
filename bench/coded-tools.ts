import { existsSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { percentile } from "./load.js";
import { machine } from "./machine.js";

/*
 * `npx tsx bench/coded-tools.ts [--calls 24000] [--compare /other/checkout ...]`: what Axon adds to a TypeScript coded
 * tool call. The same trivial tool (bench/coded_tools/typescript_bench/trivial.ts) is called through each checkout's own
 * coded-tool path, as an LLM's tool call reaches it (CodedToolActivation: class loaded once, a new instance per call,
 * sly_data checked, the AGENT messages of the call made), in rounds that alternate the checkouts so that the machine's
 * drift falls on all of them: p50 of one call at a time, and calls/s with 200 in flight. Each checkout's src/ runs
 * under tsx with its own node_modules.
 */

const { values: flags } = parseArgs({ options: { calls: { type: "string", default: "24000" }, compare: { type: "string", multiple: true } } });
const calls = Number(flags.calls);
if (!(calls > 0)) throw new Error(`--calls must be a positive number, got ${flags.calls}`);
/** Even: each checkout runs first in as many rounds as the other. */
const rounds = 6;
const inFlight = 200;
const toolPath = path.join(import.meta.dirname, "coded_tools");
const checkouts = [path.resolve(import.meta.dirname, ".."), ...(flags.compare ?? []).map((dir) => path.resolve(dir))];

type Call = () => Promise<string>;

/**
 * One trivial tool call through a checkout's CodedToolActivation, in a chat session of that checkout. Only what the
 * coded-tool path reads is given; the session's other services (LLMs, other networks, Python) are never reached.
 */
async function toolCallOf(root: string): Promise<Call> {
  const { CodedToolLoader } = await import(path.join(root, "src/agents/coded-tools.ts"));
  const { CodedToolActivation } = await importFirst(root, ["src/agents/coded-tool-activation.ts", "src/agents/coded-tools.ts"]);
  const { ChatSession, emptyUsage } = await import(path.join(root, "src/agents/chat-session.ts"));
  const request = { signal: new AbortController().signal, metadata: {}, usage: emptyUsage() };
  const services = { codedTools: new CodedToolLoader(toolPath) };
  const session = new ChatSession({ name: "typescript_bench" }, {}, request, services, () => {});
  const spec = { name: "Trivial", kind: "coded_tool", className: "trivial.Trivial", args: {} };
  const activation = new CodedToolActivation(session, spec);
  const origin = [{ tool: "Front", instantiationIndex: 1 }, { tool: "Trivial", instantiationIndex: 1 }];
  const call: Call = () => activation.invoke({ x: 1 }, { origin, caller: { origin: origin.slice(0, 1), spec } });
  if ((await call()) !== "ok") throw new Error(`${root}: the trivial tool did not answer "ok"`);
  return call;
}

/** The first of `files` the checkout has: an older one keeps CodedToolActivation in coded-tools.ts. */
async function importFirst(root: string, files: string[]) {
  for (const file of files) if (existsSync(path.join(root, file))) return import(path.join(root, file));
  throw new Error(`${root} has none of ${files.join(", ")}`);
}

async function oneAtATime(call: Call, times: number[]): Promise<void> {
  for (let i = 0; i < calls / rounds; i++) {
    const start = performance.now();
    await call();
    times.push(performance.now() - start);
  }
}

/** Milliseconds for `calls / rounds` calls, `inFlight` at a time. */
async function concurrently(call: Call): Promise<number> {
  const start = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next++ < calls / rounds) await call();
    }),
  );
  return performance.now() - start;
}

const loadBefore = os.loadavg()[0]!;
const toolCalls = await Promise.all(checkouts.map(toolCallOf));
for (const call of toolCalls) for (let i = 0; i < 20_000; i++) await call(); // warm: both sides compiled by the JIT
const results = checkouts.map(() => ({ times: [] as number[], concurrentMs: 0 }));
for (let round = 0; round < rounds; round++) {
  const order = checkouts.map((_, index) => index);
  if (round % 2 === 1) order.reverse();
  for (const index of order) {
    await oneAtATime(toolCalls[index]!, results[index]!.times);
    results[index]!.concurrentMs += await concurrently(toolCalls[index]!);
  }
}
console.log(`Machine: ${machine()}`);
console.log(`| ${calls} trivial TypeScript tool calls (${rounds} alternating rounds) | p50 µs (one at a time) | p99 µs | calls/s (${inFlight} in flight) |`);
console.log("| --- | ---: | ---: | ---: |");
checkouts.forEach((root, index) => {
  const { times, concurrentMs } = results[index]!;
  times.sort((a, b) => a - b);
  const micros = (quantile: number) => (percentile(times, quantile) * 1000).toFixed(1);
  console.log(`| ${root} | ${micros(0.5)} | ${micros(0.99)} | ${(calls / (concurrentMs / 1000)).toFixed(0)} |`);
});
console.log(`\nload average ${loadBefore.toFixed(2)} at the start, ${os.loadavg()[0]!.toFixed(2)} at the end`);
