/**
 * What issue 24's conformance fixes add to a call, in this process: the turn of the loop the gRPC fast path waits after
 * a request's end (to tell END_STREAM from a reset), and the framing and encoding checks every request to the request
 * handler meets. Each is measured as CPU per operation against the same loop without it, in the same run.
 *
 *   npx tsx bench/conformance-overhead.ts [--count 200000]
 */
import type { HttpRequest } from "../src/server/listener.js";
import { rpcFramingOf, unsupportedEncoding } from "../src/server/refused-call.js";
import { machine } from "./machine.js";

const countArgument = process.argv.indexOf("--count");
const count = countArgument > 0 ? Number(process.argv[countArgument + 1]) : 200_000;

async function cpuPerOperation(operation: () => Promise<void> | void): Promise<number> {
  const start = process.cpuUsage();
  for (let i = 0; i < count; i++) await operation();
  const used = process.cpuUsage(start);
  return ((used.user + used.system) / count) * 1000;
}

const requests = [
  { method: "POST", headers: { "content-type": "application/json" } },
  { method: "POST", headers: { "content-type": "application/grpc-web+proto", "grpc-encoding": "gzip" } },
  { method: "GET", headers: {} },
] as unknown as HttpRequest[];
const paths = ["/dev.cognizant_ai.neuro_san.api.grpc.concierge.ConciergeService/List", "/api/v1/list", "/api/v1/list"];

const resolved = () => Promise.resolve();
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
const framing = () => {
  for (let i = 0; i < requests.length; i++) {
    const found = rpcFramingOf(requests[i]!, paths[i]!);
    if (found) unsupportedEncoding(requests[i]!, found);
  }
};

// Warm both up before measuring.
await cpuPerOperation(nextTurn);
await cpuPerOperation(framing);
const base = await cpuPerOperation(resolved);
const turn = await cpuPerOperation(nextTurn);
const checks = await cpuPerOperation(framing);
console.log(`Machine: ${machine()}`);
console.log("| what | ns of CPU per call |");
console.log("| --- | ---: |");
console.log(`| a turn of the loop (setImmediate) after the request's end, over an awaited resolved promise | ${(turn - base).toFixed(0)} |`);
console.log(`| framing and encoding checks, per request (mean of a Connect, a gRPC-Web and a REST request) | ${(checks / requests.length).toFixed(0)} |`);
