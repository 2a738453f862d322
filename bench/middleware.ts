import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { percentile } from "./load.js";

/*
 * `npm run bench:middleware [-- --turns 20000] [--compare /other/checkout ...]`: what the middleware chain costs.
 *   1. An agent turn with no middleware (an empty chain) through each checkout's own LlmAgent: the model (answering at
 *      once, in process) calls a tool, the tool answers, the model answers; messages made as MAXIMAL gets them. Rounds
 *      alternate the checkouts so that the machine's drift falls on all of them. Compare with a checkout from before the
 *      chain to see what an empty one costs.
 *   2. PIIMiddleware on a 10 kB user message (prose with a few of each kind of PII in it): the before-model hook as the
 *      agent loop runs it (detect, apply the strategy, a new conversation), for each built-in type and a custom
 *      detector, beside a bare scan of the same text with the pattern the detector starts from.
 * Each checkout's src/ runs under tsx with its own node_modules.
 */

const { values: flags } = parseArgs({ options: { turns: { type: "string", default: "20000" }, compare: { type: "string", multiple: true } } });
const turns = Number(flags.turns);
if (!(turns > 0)) throw new Error(`--turns must be a positive number, got ${flags.turns}`);
/** Even: each checkout runs first in as many rounds as the other. */
const rounds = 6;
const here = path.resolve(import.meta.dirname, "..");
const checkouts = [here, ...(flags.compare ?? []).map((dir) => path.resolve(dir))];

type Turn = () => Promise<string>;

const usage = { promptTokens: 1, completionTokens: 1, totalTokens: 2, cost: 0 };
const answers = [
  { text: "", toolCalls: [{ id: "call_1", name: "Echo", arguments: { text: "hello" } }], usage, model: "m" },
  { text: "Echoed.", toolCalls: [], usage, model: "m" },
];

/** One turn of the front man through a checkout's LlmAgent: only what the loop reads is given. */
async function turnOf(root: string): Promise<Turn> {
  const { LlmAgent } = await import(path.join(root, "src/agents/llm-agent.ts"));
  const { ChatSession, emptyUsage } = await import(path.join(root, "src/agents/chat-session.ts"));
  const front = { name: "Front", kind: "front_man", instructions: "Be brief.", tools: ["Echo"], middleware: [], displayAs: "llm_agent", structureFormats: [], raw: {} };
  const echo = { name: "Echo", kind: "coded_tool", tools: [], middleware: [], displayAs: "coded_tool", structureFormats: [], raw: {}, function: { description: "Echoes.", parameters: { type: "object", properties: { text: { type: "string" } } } } };
  // Both spellings of the step limit: a checkout from before max_steps reads max_iterations.
  const network = { name: "bench", nodes: new Map<string, object>([["Front", front], ["Echo", echo]]), limits: { maxIterations: 20, maxSteps: 20, maxAttempts: 1, maxExecutionSeconds: 120 }, errorFragments: [] };
  let answer = 0;
  const llm = { description: "in-process", complete: async () => answers[answer++ % 2] };
  const activation = { invoke: async () => "echoed hello" };
  const services = { llmFor: () => llm, activationOf: () => activation, functionOf: () => undefined, logger: { warn() {} } };
  const request = { signal: new AbortController().signal, metadata: {}, clientId: "bench", usage: emptyUsage() };
  const session = new ChatSession(network, {}, request, services, () => {});
  const origin = [{ tool: "Front", instantiationIndex: 1 }];
  const turn: Turn = () => new LlmAgent(session, front).converse(origin, [], "Echo hello");
  if ((await turn()) !== "Echoed.") throw new Error(`${root}: the turn did not answer "Echoed."`);
  return turn;
}

async function timed(turn: Turn, times: number[], count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const start = performance.now();
    await turn();
    times.push(performance.now() - start);
  }
}

const loadBefore = os.loadavg()[0]!;
const agentTurns = await Promise.all(checkouts.map(turnOf));
for (const turn of agentTurns) for (let i = 0; i < 10_000; i++) await turn(); // warm: every checkout compiled by the JIT
const results = checkouts.map(() => [] as number[]);
for (let round = 0; round < rounds; round++) {
  const order = checkouts.map((_, index) => index);
  if (round % 2 === 1) order.reverse();
  for (const index of order) await timed(agentTurns[index]!, results[index]!, turns / rounds);
}
const micros = (times: number[], quantile: number) => (percentile(times, quantile) * 1000).toFixed(1);
console.log(`| ${turns} agent turns, no middleware (${rounds} alternating rounds) | p50 µs | p99 µs |`);
console.log("| --- | ---: | ---: |");
checkouts.forEach((root, index) => {
  const times = results[index]!.sort((a, b) => a - b);
  console.log(`| ${root} | ${micros(times, 0.5)} | ${micros(times, 0.99)} |`);
});

// 2. PII redaction of a 10 kB message: mostly prose, a few addresses and numbers in it.
const { piiMiddleware } = await import(path.join(here, "src/agents/middleware/pii.ts"));
// Prose, with a few of each kind of PII spread through it (four addresses, phones, IPs and URLs; two cards and MACs).
const prose = "The quarterly report is attached; the figures moved little, and the team would like your view before Friday. ";
const personal = [
  "mail ann.lee@example.org",
  "call 555-0199",
  "see www.example.org/q3",
  "from 10.0.0.12",
  "card 4111 1111 1111 1111",
  "nic 00:1a:2b:3c:4d:5e",
  "or bob@example.com",
  "or 555-0142",
  "or https://example.org/report",
  "or 192.168.1.20",
  "or jo@mail.example.net",
  "or 555-0101",
  "or example.org/archive",
  "or 172.16.0.5",
  "card 5500 0000 0000 0004",
  "nic 00-1A-2B-3C-4D-5F",
  "or kim@example.io",
  "or 555-0177",
  "or www.example.net",
  "or 10.1.2.3",
];
let message = "";
for (let i = 0; message.length < 10_240; i++) message += i % 4 === 3 ? `${personal[(i >> 2) % personal.length]}. ` : prose;
message = message.slice(0, 10_240);
// The bare scan: the pattern each detector starts from, once over the text.
const cases = [
  { name: "email, redact", args: { pii_type: "email", strategy: "redact" }, pattern: /[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}/g },
  { name: "credit_card, mask", args: { pii_type: "credit_card", strategy: "mask" }, pattern: /\b\d{4}[\s-]?\d{4}[\s-]?\d{4}[\s-]?\d{4}\b/g },
  { name: "ip, hash", args: { pii_type: "ip", strategy: "hash" }, pattern: /(?:[0-9]{1,3}\.){3}[0-9]{1,3}/g },
  { name: "mac_address, redact", args: { pii_type: "mac_address", strategy: "redact" }, pattern: /(?:[0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}/g },
  { name: "url, redact", args: { pii_type: "url", strategy: "redact" }, pattern: /https?:\/\/[^\s<>"{}|\\^`[\]]+/g },
  { name: "phone_number, mask (custom detector)", args: { pii_type: "phone_number", strategy: "mask", detector: "\\d{3}-\\d{4}" }, pattern: /\d{3}-\d{4}/g },
];
const iterations = 20_000;
console.log(`\n| PII on a ${message.length}-byte user message (${iterations} runs) | before_model hook p50 µs | p99 µs | bare scan of the same regex p50 µs |`);
console.log("| --- | ---: | ---: | ---: |");
for (const { name, args, pattern } of cases) {
  const middleware = piiMiddleware.make(args, {}, 0);
  const state = { messages: [{ role: "user", content: message }] };
  const hook = (): Promise<unknown> => middleware.beforeModel(state, {});
  const scan = (): number => [...message.matchAll(pattern)].length;
  for (let i = 0; i < 5000; i++) {
    await hook();
    scan();
  }
  const hookTimes: number[] = [];
  const scanTimes: number[] = [];
  for (let i = 0; i < iterations; i++) {
    let start = performance.now();
    await hook();
    hookTimes.push(performance.now() - start);
    start = performance.now();
    scan();
    scanTimes.push(performance.now() - start);
  }
  hookTimes.sort((a, b) => a - b);
  scanTimes.sort((a, b) => a - b);
  console.log(`| ${name} | ${micros(hookTimes, 0.5)} | ${micros(hookTimes, 0.99)} | ${micros(scanTimes, 0.5)} |`);
}
console.log(`\nload average ${loadBefore.toFixed(2)} at the start, ${os.loadavg()[0]!.toFixed(2)} at the end; Node ${process.version}`);
