import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { KeepAliveHttpClient, RawGrpcClient, type HttpRequestSpec } from "./clients.js";
import { percentile, runLoad, type Call, type LoadResult } from "./load.js";
import { machine } from "./machine.js";
import type { AxonReady } from "./serve-axon.js";
import { printStartUp } from "./start.js";
import type { BaselinesReady, CannedResponses } from "./serve-baselines.js";
import { startServerProcess, type ServerProcess } from "./server-process.js";
import { startOtlpStandIn } from "./otlp-stand-in.js";
import { startTracing } from "../src/telemetry/start.js";
import { ConciergeService } from "../src/gen/neuro_san/api/grpc/concierge_pb.js";
import { createLogger, batchedLines } from "../src/logger.js";
import { Metrics } from "../src/server/metrics.js";
import { CallPipeline } from "../src/server/pipeline/call-pipeline.js";
import { IntakeBudget } from "../src/server/intake-budget.js";

/*
 * `npm run bench`: ConciergeService.List on Axon against the servers its users would otherwise write, over gRPC, REST
 * and Connect JSON, same client, same load, same run; then Axon's start-up. Prints Markdown for docs/benchmarks.md.
 */

const { values: flags } = parseArgs({
  options: {
    seconds: { type: "string", default: "4" },
    warmup: { type: "string", default: "1" },
    rounds: { type: "string", default: "3" },
    concurrency: { type: "string", default: "32" },
    // How many times to start Axon (and run `axon --help`) for the start-up figures.
    starts: { type: "string", default: "5" },
    // Writes a V8 CPU profile of the Axon process to this folder (open it in Chrome DevTools or speedscope).
    profile: { type: "string" },
  },
});
const settings = {
  durationMs: positive("seconds") * 1000,
  warmupMs: positive("warmup") * 1000,
  rounds: positive("rounds"),
  concurrency: positive("concurrency"),
  starts: positive("starts"),
};

function positive(flag: "seconds" | "warmup" | "rounds" | "concurrency" | "starts"): number {
  const value = Number(flags[flag]);
  if (!(value > 0)) throw new Error(`--${flag} must be a positive number, got ${flags[flag]}`);
  return value;
}

const projectRoot = path.resolve(import.meta.dirname, "..");
const listMethod = "/dev.cognizant_ai.neuro_san.api.grpc.concierge.ConciergeService/List";
const emptyRequest = Buffer.alloc(0); // ConciergeRequest has no fields set.
const restList: HttpRequestSpec = { method: "GET", path: "/api/v1/list" };
const connectList: HttpRequestSpec = {
  method: "POST",
  path: listMethod,
  headers: { "content-type": "application/json" },
  body: Buffer.from("{}"),
};
// The memory sampler is a cost per second, not per request: it would skew CPU per request towards the slower server.
const serverEnv = { BENCH_MEMORY_SAMPLER: "off" };
// Tracing on: every call sampled, its spans exported over OTLP/HTTP (protobuf) to a local collector stand-in.
const collector = await startOtlpStandIn();
const tracingEnv = { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_TRACES_SAMPLER: "always_on" };

/** One server answering one surface, measured against the others in the same rounds. */
interface Target {
  name: string;
  process: ServerProcess<unknown>;
  call: Call;
}
interface Surface {
  name: string;
  /** Axon first, then what it is compared with. */
  targets: Target[];
}
interface Measured extends LoadResult {
  serverCpuMicros: number;
}

const processes: ServerProcess<unknown>[] = [];
const closers: (() => void)[] = [];
try {
  const axon = await startServerProcess<AxonReady>(new URL("./serve-axon.ts", import.meta.url), {
    env: serverEnv,
    nodeArgs: flags.profile ? ["--cpu-prof", `--cpu-prof-dir=${flags.profile}`] : [],
  });
  processes.push(axon);
  const axonGrpc = new RawGrpcClient(`127.0.0.1:${axon.ready.port}`);
  const axonHttp = new KeepAliveHttpClient({ host: "127.0.0.1", port: axon.ready.port }, settings.concurrency);
  closers.push(() => axonGrpc.close(), () => axonHttp.close());
  const traced = await startServerProcess<AxonReady>(new URL("./serve-axon.ts", import.meta.url), { env: { ...serverEnv, ...tracingEnv } });
  processes.push(traced);
  const tracedGrpc = new RawGrpcClient(`127.0.0.1:${traced.ready.port}`);
  const tracedHttp = new KeepAliveHttpClient({ host: "127.0.0.1", port: traced.ready.port }, settings.concurrency);
  closers.push(() => tracedGrpc.close(), () => tracedHttp.close());
  const tracedName = "Axon, tracing on (100 % sampled, OTLP to a stand-in)";

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
    env: { ...serverEnv, BENCH_CANNED_RESPONSES: JSON.stringify(canned) },
  });
  processes.push(baselines);
  const bareGrpc = new RawGrpcClient(`127.0.0.1:${baselines.ready.grpcPort}`);
  const protoLoaderGrpc = new RawGrpcClient(`127.0.0.1:${baselines.ready.protoLoaderPort}`);
  const bareHttp = new KeepAliveHttpClient({ host: "127.0.0.1", port: baselines.ready.httpPort }, settings.concurrency);
  closers.push(() => bareGrpc.close(), () => protoLoaderGrpc.close(), () => bareHttp.close());

  const surfaces: Surface[] = [
    {
      name: "gRPC `ConciergeService/List`",
      targets: [
        { name: "Axon", process: axon, call: axonGrpc.caller(listMethod, emptyRequest) },
        { name: tracedName, process: traced, call: tracedGrpc.caller(listMethod, emptyRequest) },
        { name: "grpc-js + proto-loader", process: baselines, call: protoLoaderGrpc.caller(listMethod, emptyRequest) },
        { name: "bare grpc-js, same bytes", process: baselines, call: bareGrpc.caller(listMethod, emptyRequest) },
      ],
    },
    {
      name: "REST `GET /api/v1/list`",
      targets: [
        { name: "Axon", process: axon, call: axonHttp.caller(restList) },
        { name: tracedName, process: traced, call: tracedHttp.caller(restList) },
        { name: "bare node:http, same bytes", process: baselines, call: bareHttp.caller(restList) },
      ],
    },
    {
      name: "Connect JSON `POST …/List`",
      targets: [
        { name: "Axon", process: axon, call: axonHttp.caller(connectList) },
        { name: tracedName, process: traced, call: tracedHttp.caller(connectList) },
        { name: "bare node:http, same bytes", process: baselines, call: bareHttp.caller(connectList) },
      ],
    },
  ];

  printHeader({ grpcBytes: grpcMessage.length, restBytes: restReply.body.length, connectBytes: connectReply.body.length });
  const results = new Map<Surface, Measured[][]>();
  for (const surface of surfaces) {
    const runs: Measured[][] = surface.targets.map(() => []);
    // Forwards, then backwards: whichever runs later in a round gets a warmer machine; alternating cancels that out.
    for (let round = 0; round < settings.rounds; round++) {
      const order = surface.targets.map((_, index) => index);
      if (round % 2 === 1) order.reverse();
      for (const index of order) {
        const target = surface.targets[index]!;
        // CPU is counted from the end of the warm-up, like the requests it is divided by.
        let cpuBefore = 0;
        const load = await runLoad(target.call, { ...settings, beforeMeasuring: async () => void (cpuBefore = await target.process.cpuMicros()) });
        runs[index]!.push({ ...load, serverCpuMicros: (await target.process.cpuMicros()) - cpuBefore });
        process.stderr.write(`  ${surface.name} ${target.name} round ${round + 1}: ${Math.round(load.requests / load.seconds)} req/s\n`);
      }
    }
    results.set(surface, runs);
  }
  printTables(results);
  console.log("");
  console.log(`Load average at end of the List runs (1 min): ${os.loadavg()[0]!.toFixed(2)}`);
  console.log(`Trace batches the collector stand-in received: ${collector.batches()}`);
} finally {
  for (const close of closers) close();
  await Promise.all(processes.map((child) => child.stop()));
}


console.log("");
await printObservationCost();
collector.close();
console.log("");
await printStartUp({ starts: settings.starts, checkouts: [projectRoot] });

function printHeader(sizes: { grpcBytes: number; restBytes: number; connectBytes: number }): void {
  const args = process.argv.slice(2).join(" ");
  console.log(`Command: \`npm run bench${args ? ` -- ${args}` : ""}\``);
  console.log(`Date: ${new Date().toISOString()}`);
  console.log(`Machine: ${machine()}`);
  console.log(
    `Load: ${settings.concurrency} requests in flight (one HTTP/2 connection for gRPC, ${settings.concurrency} keep-alive HTTP/1.1 sockets otherwise), ` +
      `${flags.warmup} s warm-up then ${flags.seconds} s measured, ${settings.rounds} rounds alternating the servers`,
  );
  // Other work on the machine takes cores from every side; the load average before and after shows if there was any.
  console.log(`Load average at start (1 min): ${os.loadavg()[0]!.toFixed(2)}`);
  console.log(`Response: gRPC message ${sizes.grpcBytes} B, REST body ${sizes.restBytes} B, Connect body ${sizes.connectBytes} B`);
  console.log("");
}

function printTables(results: Map<Surface, Measured[][]>): void {
  const rows: string[] = [];
  const ratios: string[] = [];
  for (const [surface, runs] of results) {
    const [axon, ...others] = runs.map(combine);
    rows.push(row(surface.name, surface.targets[0]!.name, axon!));
    others.forEach((figures, index) => {
      const name = surface.targets[index + 1]!.name;
      rows.push(row("", name, figures));
      ratios.push(
        `| ${surface.name} | ${name} | ${ratio(axon!.cpuMicrosPerRequest, figures.cpuMicrosPerRequest)} | ` +
          `${ratio(axon!.requestsPerSecond, figures.requestsPerSecond)} | ${ratio(axon!.p50, figures.p50)} | ${ratio(axon!.p99, figures.p99)} |`,
      );
    });
  }
  console.log("| Surface | Server | req/s (per round) | p50 ms | p90 ms | p99 ms | server CPU µs/req | server cores | client cores | errors |");
  console.log("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const line of rows) console.log(line);
  console.log("");
  console.log("| Surface | Axon ÷ | server CPU per request | req/s | p50 | p99 |");
  console.log("| --- | --- | ---: | ---: | ---: | ---: |");
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

/**
 * What the call pipeline costs a call, in this process (from the sources, which tsx compiles as esbuild builds dist/):
 * `begin` (request id, forwarded metadata, authentication) and `finish` (status, metrics, the access line) for a List
 * call, the access line written as `npm start` writes it (batched, here to /dev/null), at info and
 * with access lines off (warn); then at info with tracing on, every call a span exported to the collector stand-in.
 */
async function printObservationCost(): Promise<void> {
  const calls = 200_000;
  console.log("Observation per call (the pipeline's begin + finish, List over gRPC, no request id sent):");
  console.log("");
  console.log("| LOG_LEVEL | tracing | CPU µs per call |");
  console.log("| --- | --- | ---: |");
  for (const { level, traced } of [{ level: "warn", traced: false }, { level: "info", traced: false }, { level: "info", traced: true }]) {
    // The logger reads the environment to decide on its trace fields, as the server's does at start.
    if (traced) Object.assign(process.env, tracingEnv);
    const stopTracing = await startTracing(traced ? process.env : {});
    const pipeline = new CallPipeline({
      logger: createLogger(level, batchedLines("/dev/null")),
      metrics: new Metrics(),
      authenticate: () => undefined,
      forwardedMetadata: ["request_id", "user_id"],
      intake: new IntakeBudget(64 * 1024 * 1024),
    });
    const header = (): string | undefined => undefined;
    const before = process.cpuUsage();
    // In slices, so that the writer's asynchronous writes run between them as they would between requests.
    for (let done = 0; done < calls; done += 100) {
      for (let call = 0; call < 100; call++) (await pipeline.begin({ method: ConciergeService.method.list, protocol: "grpc", header })).finish();
      await new Promise((resolve) => setImmediate(resolve));
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
    const used = process.cpuUsage(before);
    await stopTracing();
    console.log(`| ${level} | ${traced ? "on, 100 % sampled" : "off"} | ${((used.user + used.system) / calls).toFixed(1)} |`);
  }
}

function ratio(axon: number, baseline: number): string {
  return `${(axon / baseline).toFixed(2)}×`;
}

function sum(values: number[]): number {
  return values.reduce((total, value) => total + value, 0);
}
