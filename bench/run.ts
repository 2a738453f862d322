import os from "node:os";
import { parseArgs } from "node:util";
import { KeepAliveHttpClient, RawGrpcClient, type HttpRequestSpec } from "./clients.js";
import { percentile, runLoad, type Call, type LoadResult } from "./load.js";
import type { AxonReady } from "./serve-axon.js";
import type { BaselinesReady, CannedResponses } from "./serve-baselines.js";
import { startServerProcess, type ServerProcess } from "./server-process.js";

/*
 * `npm run bench`: ConciergeService.List on Axon against bare servers answering the same bytes, over gRPC,
 * REST and Connect JSON, same client, same load, same run. Prints Markdown for docs/benchmarks.md.
 */

const { values: flags } = parseArgs({
  options: {
    seconds: { type: "string", default: "4" },
    warmup: { type: "string", default: "1" },
    rounds: { type: "string", default: "3" },
    concurrency: { type: "string", default: "32" },
    // Writes a V8 CPU profile of the Axon process to this folder (open it in Chrome DevTools or speedscope).
    profile: { type: "string" },
  },
});
const settings = {
  durationMs: positive("seconds") * 1000,
  warmupMs: positive("warmup") * 1000,
  rounds: positive("rounds"),
  concurrency: positive("concurrency"),
};

function positive(flag: "seconds" | "warmup" | "rounds" | "concurrency"): number {
  const value = Number(flags[flag]);
  if (!(value > 0)) throw new Error(`--${flag} must be a positive number, got ${flags[flag]}`);
  return value;
}

const listMethod = "/dev.cognizant_ai.neuro_san.api.grpc.concierge.ConciergeService/List";
const emptyRequest = Buffer.alloc(0); // ConciergeRequest has no fields set.
const restList: HttpRequestSpec = { method: "GET", path: "/api/v1/list" };
const connectList: HttpRequestSpec = {
  method: "POST",
  path: listMethod,
  headers: { "content-type": "application/json" },
  body: Buffer.from("{}"),
};

type Target = "Axon" | "baseline";
interface Surface {
  name: string;
  baselineName: string;
  calls: Record<Target, Call>;
}
interface Measured extends LoadResult {
  serverCpuMicros: number;
}

const processes: ServerProcess<unknown>[] = [];
const closers: (() => void)[] = [];
try {
  const axon = await startServerProcess<AxonReady>(new URL("./serve-axon.ts", import.meta.url), {
    nodeArgs: flags.profile ? ["--cpu-prof", `--cpu-prof-dir=${flags.profile}`] : [],
  });
  processes.push(axon);
  const axonGrpc = new RawGrpcClient(`127.0.0.1:${axon.ready.port}`);
  const axonHttp = new KeepAliveHttpClient({ host: "127.0.0.1", port: axon.ready.port }, settings.concurrency);
  closers.push(() => axonGrpc.close(), () => axonHttp.close());

  // The baselines answer exactly what Axon answered, captured once here.
  const grpcMessage = await axonGrpc.unary(listMethod, emptyRequest);
  const restReply = await axonHttp.send(restList);
  const connectReply = await axonHttp.send(connectList);
  for (const reply of [restReply, connectReply]) {
    if (reply.status !== 200) throw new Error(`Axon answered ${reply.status}: ${reply.body.toString()}`);
  }
  const canned: CannedResponses = {
    grpc: { method: listMethod, messageBase64: grpcMessage.toString("base64") },
    http: [
      { ...restList, contentType: restReply.contentType, bodyBase64: restReply.body.toString("base64") },
      { ...connectList, contentType: connectReply.contentType, bodyBase64: connectReply.body.toString("base64") },
    ],
  };
  const baselines = await startServerProcess<BaselinesReady>(new URL("./serve-baselines.ts", import.meta.url), {
    env: { BENCH_CANNED_RESPONSES: JSON.stringify(canned) },
  });
  processes.push(baselines);
  const baselineGrpc = new RawGrpcClient(`127.0.0.1:${baselines.ready.grpcPort}`);
  const baselineHttp = new KeepAliveHttpClient({ host: "127.0.0.1", port: baselines.ready.httpPort }, settings.concurrency);
  closers.push(() => baselineGrpc.close(), () => baselineHttp.close());

  const servers: Record<Target, ServerProcess<unknown>> = { Axon: axon, baseline: baselines };
  const surfaces: Surface[] = [
    {
      name: "gRPC `ConciergeService/List`",
      baselineName: "bare @grpc/grpc-js",
      calls: { Axon: axonGrpc.caller(listMethod, emptyRequest), baseline: baselineGrpc.caller(listMethod, emptyRequest) },
    },
    {
      name: "REST `GET /api/v1/list`",
      baselineName: "bare node:http",
      calls: { Axon: axonHttp.caller(restList), baseline: baselineHttp.caller(restList) },
    },
    {
      name: "Connect JSON `POST …/List`",
      baselineName: "bare node:http",
      calls: { Axon: axonHttp.caller(connectList), baseline: baselineHttp.caller(connectList) },
    },
  ];

  printHeader({ grpcBytes: grpcMessage.length, restBytes: restReply.body.length, connectBytes: connectReply.body.length });
  const results = new Map<Surface, Record<Target, Measured[]>>();
  for (const surface of surfaces) {
    const runs: Record<Target, Measured[]> = { Axon: [], baseline: [] };
    // A, B then B, A: whichever runs second in a round gets a warmer machine; alternating cancels that out.
    for (let round = 0; round < settings.rounds; round++) {
      const order: Target[] = round % 2 === 0 ? ["Axon", "baseline"] : ["baseline", "Axon"];
      for (const target of order) {
        const server = servers[target];
        // CPU is counted from the end of the warm-up, like the requests it is divided by.
        let cpuBefore = 0;
        const load = await runLoad(surface.calls[target], { ...settings, beforeMeasuring: async () => void (cpuBefore = await server.cpuMicros()) });
        runs[target].push({ ...load, serverCpuMicros: (await server.cpuMicros()) - cpuBefore });
        process.stderr.write(`  ${surface.name} ${target} round ${round + 1}: ${Math.round(load.requests / load.seconds)} req/s\n`);
      }
    }
    results.set(surface, runs);
  }
  printTables(results);
  console.log("");
  console.log(`Load average at end (1 min): ${os.loadavg()[0]!.toFixed(2)}`);
} finally {
  for (const close of closers) close();
  await Promise.all(processes.map((child) => child.stop()));
}

function printHeader(sizes: { grpcBytes: number; restBytes: number; connectBytes: number }): void {
  const cpus = os.cpus();
  const args = process.argv.slice(2).join(" ");
  console.log(`Command: \`npm run bench${args ? ` -- ${args}` : ""}\``);
  console.log(`Date: ${new Date().toISOString()}`);
  console.log(`Machine: ${cpus.length} × ${cpus[0]?.model.trim() ?? "unknown CPU"}, ${os.platform()} ${os.release()}, Node ${process.version}`);
  console.log(
    `Load: ${settings.concurrency} requests in flight (one HTTP/2 connection for gRPC, ${settings.concurrency} keep-alive HTTP/1.1 sockets otherwise), ` +
      `${flags.warmup} s warm-up then ${flags.seconds} s measured, ${settings.rounds} rounds alternating Axon and baseline`,
  );
  // Other work on the machine takes cores from both sides; the load average before and after shows if there was any.
  console.log(`Load average at start (1 min): ${os.loadavg()[0]!.toFixed(2)}`);
  console.log(`Response: gRPC message ${sizes.grpcBytes} B, REST body ${sizes.restBytes} B, Connect body ${sizes.connectBytes} B`);
  console.log("");
}

function printTables(results: Map<Surface, Record<Target, Measured[]>>): void {
  const rows: string[] = [];
  const ratios: string[] = [];
  for (const [surface, runs] of results) {
    const axon = combine(runs.Axon);
    const baseline = combine(runs.baseline);
    rows.push(row(surface.name, "Axon", axon), row("", surface.baselineName, baseline));
    ratios.push(
      `| ${surface.name} | ${ratio(axon.requestsPerSecond, baseline.requestsPerSecond)} | ${ratio(axon.p50, baseline.p50)} | ` +
        `${ratio(axon.p99, baseline.p99)} | ${ratio(axon.cpuMicrosPerRequest, baseline.cpuMicrosPerRequest)} |`,
    );
  }
  console.log("| Surface | Server | req/s (per round) | p50 ms | p90 ms | p99 ms | server CPU µs/req | server cores | client cores | errors |");
  console.log("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const line of rows) console.log(line);
  console.log("");
  console.log("| Surface | Axon / baseline req/s | p50 | p99 | server CPU per request |");
  console.log("| --- | ---: | ---: | ---: | ---: |");
  for (const line of ratios) console.log(line);
}

function combine(runs: Measured[]) {
  const seconds = sum(runs.map((run) => run.seconds));
  const requests = sum(runs.map((run) => run.requests));
  const latencies = runs.flatMap((run) => run.latenciesMs).sort((a, b) => a - b);
  const serverCpuMicros = sum(runs.map((run) => run.serverCpuMicros));
  return {
    requestsPerSecond: requests / seconds,
    perRound: runs.map((run) => run.requests / run.seconds),
    p50: percentile(latencies, 0.5),
    p90: percentile(latencies, 0.9),
    p99: percentile(latencies, 0.99),
    cpuMicrosPerRequest: serverCpuMicros / requests,
    serverCores: serverCpuMicros / 1e6 / seconds,
    clientCores: sum(runs.map((run) => run.clientCores * run.seconds)) / seconds,
    errors: sum(runs.map((run) => run.errors)),
  };
}

function row(surface: string, server: string, figures: ReturnType<typeof combine>): string {
  const perRound = figures.perRound.map((value) => Math.round(value).toLocaleString("en-US")).join(", ");
  return (
    `| ${surface} | ${server} | ${Math.round(figures.requestsPerSecond).toLocaleString("en-US")} (${perRound}) | ` +
    `${figures.p50.toFixed(2)} | ${figures.p90.toFixed(2)} | ${figures.p99.toFixed(2)} | ${figures.cpuMicrosPerRequest.toFixed(0)} | ` +
    `${figures.serverCores.toFixed(2)} | ${figures.clientCores.toFixed(2)} | ${figures.errors} |`
  );
}

function ratio(axon: number, baseline: number): string {
  return `${(axon / baseline).toFixed(2)}×`;
}

function sum(values: number[]): number {
  return values.reduce((total, value) => total + value, 0);
}
