import { parseArgs } from "node:util";
import { SubmitOperationRequestSchema } from "../src/gen/axon/agent/v1/agent_pb.js";
import { parseJsonText, parseLenientJson, parseStrictJson } from "../src/server/rest/lenient-json.js";
import { parseStrictBody } from "../src/server/strict/json-body.js";
import { findUnstorableField } from "../src/server/strict/unstorable-fields.js";
import { machine } from "./machine.js";

/*
 * `npx tsx bench/strict-json.ts`: what the strict reading of an Agent V1 body costs (agent-v1.md §11: the 2 MiB bound,
 * the duplicate-key scan, unknown fields refused, the search for unstorable values) against the lenient reading the
 * REST layer did before (UTF-8, JSON.parse, the descriptor walk), on the same submit bodies, in one process, the two
 * readings interleaved round by round so a drift in the machine's load falls on both. CPU per body from
 * `process.cpuUsage()`. Prints Markdown.
 */

const { values: flags } = parseArgs({ options: { rounds: { type: "string", default: "5" }, milliseconds: { type: "string", default: "400" } } });
const rounds = Number(flags.rounds);
const milliseconds = Number(flags.milliseconds);

/** A submit body whose `arguments.body` makes it about `bytes` long, with nested arguments as agents send them. */
function submitBody(bytes: number): Uint8Array {
  const base = {
    idempotency_key: "bench-1",
    operation: "http.request",
    target: { credential: "upstream", path: "/things" },
    arguments: { method: "POST", headers: { accept: "application/json" }, query: { a: "1", b: "2" }, body: "" },
    reason: "measure the strict reading",
  };
  const text = JSON.stringify(base);
  return Buffer.from(text.replace('"body":""', `"body":"${"x".repeat(Math.max(0, bytes - text.length))}"`));
}

/** A body of many small objects: the duplicate-key scan's worst case is structure, not text. */
function structuredBody(items: number): Uint8Array {
  const rows = Array.from({ length: items }, (_, index) => ({ id: index, name: `row ${index}`, tags: ["a", "b"], nested: { x: 1, y: 2 } }));
  return Buffer.from(JSON.stringify({ idempotency_key: "bench-2", operation: "agent.chat", target: { network: "greeter" }, arguments: { text: "hi", sly_data: { rows } }, reason: "r" }));
}

const readings = {
  lenient: (bytes: Uint8Array) => parseLenientJson(SubmitOperationRequestSchema, parseJsonText(bytes) ?? {}),
  strict: (bytes: Uint8Array) => {
    const message = parseStrictJson(SubmitOperationRequestSchema, parseStrictBody(bytes) ?? {});
    if (findUnstorableField(SubmitOperationRequestSchema, message, "") !== undefined) throw new Error("unexpected violation");
    return message;
  },
};

function measure(read: (bytes: Uint8Array) => unknown, body: Uint8Array): { count: number; cpuMicros: number } {
  const start = process.cpuUsage();
  const until = performance.now() + milliseconds;
  let count = 0;
  while (performance.now() < until) {
    read(body);
    count++;
  }
  const used = process.cpuUsage(start);
  return { count, cpuMicros: used.user + used.system };
}

const bodies: [string, Uint8Array][] = [
  ["submit, 300 B", submitBody(300)],
  ["submit, 64 KiB", submitBody(64 * 1024)],
  ["submit, 1 MiB", submitBody(1024 * 1024)],
  ["sly_data of 2,000 small objects (190 KiB)", structuredBody(2000)],
];

console.log(`Machine: ${machine()}`);
console.log(`load average at start: ${(await import("node:os")).loadavg().map((value) => value.toFixed(2)).join(", ")}\n`);
console.log("| Body | bytes | lenient µs CPU per body | strict µs CPU per body | strict ÷ lenient |");
console.log("| --- | ---: | ---: | ---: | ---: |");
for (const [label, body] of bodies) {
  const totals = { lenient: { count: 0, cpuMicros: 0 }, strict: { count: 0, cpuMicros: 0 } };
  for (let round = 0; round < rounds; round++) {
    // Alternate which reading goes first, so neither always runs on a warmer (or busier) machine.
    const order = round % 2 === 0 ? (["lenient", "strict"] as const) : (["strict", "lenient"] as const);
    for (const name of order) {
      const { count, cpuMicros } = measure(readings[name], body);
      totals[name].count += count;
      totals[name].cpuMicros += cpuMicros;
    }
  }
  const lenient = totals.lenient.cpuMicros / totals.lenient.count;
  const strict = totals.strict.cpuMicros / totals.strict.count;
  console.log(`| ${label} | ${body.byteLength.toLocaleString("en")} | ${lenient.toFixed(1)} | ${strict.toFixed(1)} | ${(strict / lenient).toFixed(2)}× |`);
}
console.log(`\nload average at end: ${(await import("node:os")).loadavg().map((value) => value.toFixed(2)).join(", ")}`);
