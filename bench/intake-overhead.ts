import { EventEmitter } from "node:events";
import os from "node:os";
import { watchHttp1Body } from "../src/server/intake-timeouts.js";
import { machine } from "./machine.js";

/*
 * `npx tsx bench/intake-overhead.ts`: what the body deadline adds to one HTTP/1.1 request, in this process's CPU time:
 * the same request and response objects made and finished with and without `watchHttp1Body`, in the same run, for a
 * request that declares a body (Content-Length) and one that does not (a GET).
 */

const calls = 200_000;

function cpuMicrosPerCall(watch: boolean, headers: Record<string, string>): number {
  const start = process.cpuUsage();
  for (let i = 0; i < calls; i++) {
    const req = Object.assign(new EventEmitter(), { complete: true, socket: new EventEmitter(), headers });
    const res = new EventEmitter();
    if (watch) watchHttp1Body(req as never, res as never, 30_000, () => {});
    res.emit("finish");
    res.emit("close");
  }
  const used = process.cpuUsage(start);
  return (used.user + used.system) / calls;
}

console.log(`Machine: ${machine()}`);
console.log("| request | baseline µs | with the deadline µs | added µs |\n| --- | ---: | ---: | ---: |");
for (const [name, headers] of [
  ["with a body (Content-Length: 10)", { "content-length": "10" }],
  ["without a body", {}],
] as const) {
  const rounds = [0, 1, 2].map(() => [cpuMicrosPerCall(false, headers), cpuMicrosPerCall(true, headers)] as const);
  const [base, watched] = rounds.sort((a, b) => a[1] - a[0] - (b[1] - b[0]))[1]!; // the median round
  console.log(`| ${name} | ${base.toFixed(2)} | ${watched.toFixed(2)} | ${(watched - base).toFixed(2)} |`);
}
console.log(`\nload average ${os.loadavg().map((load) => load.toFixed(2)).join(", ")}`);
