import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import type { Provider } from "../src/store/database.js";
import { chatError } from "./chat-check.js";
import { KeepAliveHttpClient, RawGrpcClient, type HttpRequestSpec } from "./clients.js";
import { runLoad, runUntil, type LoadResult } from "./load.js";
import { ChatCrowd, listCaller, listMethod, OperationTraffic, type CrowdResult, type Origin } from "./load-traffic.js";
import { printReport, type Baselines, type PhaseName, type PhaseResult, type SetupResult } from "./mixed-report.js";
import { backendCpuBetween, backendCpuMicros, createPostgresDatabase, watchAdvisoryLockWaiters } from "./postgres.js";
import { countRows, openRawSubmitStore, readSubmitRows } from "./raw-submit-store.js";
import type { AxonReady } from "./serve-axon.js";
import type { BaselinesReady, CannedResponses } from "./serve-baselines.js";
import type { ChatBaselineReady, ChatBaselineScript } from "./serve-chat-baseline.js";
import type { ScriptedLlmReady, ScriptedLlmTraffic } from "./serve-scripted-llm.js";
import { startServerProcess, type ServerProcess, type ServerSample } from "./server-process.js";

/*
 * `npm run bench:load`: mixed traffic against Axon: List over gRPC, crowds of streaming chats all open at once
 * against the scripted LLM, and Agent Operations (submit an agent.chat, long-poll it to its end). Each kind runs
 * alone, List and chats each beside operations at full rate, then all three at once, on SQLite with one replica and
 * on PostgreSQL with one and two replicas (two Axon processes on one fresh database, the load split between them).
 * The bare baselines of the earlier benches run in the same run: the bare grpc-js List server, the bare chat replay,
 * raw SQL inserts of a submit's rows.
 * Every server is its own process; this one only generates load. Prints Markdown for docs/benchmarks.md.
 */

const { values: flags } = parseArgs({
  options: {
    // How long List alone, operations alone and the raw baselines run; chat phases last as long as their waves.
    seconds: { type: "string", default: "6" },
    warmup: { type: "string", default: "1" },
    chats: { type: "string", default: "1000" },
    waves: { type: "string", default: "1" },
    "list-concurrency": { type: "string", default: "8" },
    "operations-concurrency": { type: "string", default: "8" },
    setups: { type: "string", default: "sqlite,postgresql,postgresql-2" },
    // Writes a V8 CPU profile of each Axon process to this folder (open it in Chrome DevTools or speedscope).
    profile: { type: "string" },
    help: { type: "boolean", default: false },
  },
});
if (flags.help) {
  console.log(`npm run bench:load [-- options]
  --seconds N                 List-alone, operations-alone and baseline phases (default 6)
  --warmup N                  warm-up of each kind of traffic on each new server, in seconds (default 1)
  --chats N                   chats opened at once (default 1000)
  --waves N                   crowds of chats per chat phase, one after another (default 1)
  --list-concurrency N        List calls in flight (default 8)
  --operations-concurrency N  operations in flight, each submitted then waited to its end (default 8)
  --setups LIST               of sqlite, postgresql, postgresql-2 (default all three)
  --profile DIR               write a V8 CPU profile of each Axon process to DIR
Quick: npm run bench:load -- --seconds 2 --chats 100 --setups sqlite`);
  process.exit(0);
}
type NumericFlag = "seconds" | "warmup" | "chats" | "waves" | "list-concurrency" | "operations-concurrency";
function positive(flag: NumericFlag): number {
  const value = Number(flags[flag]);
  if (!(value > 0)) throw new Error(`--${flag} must be a positive number, got ${flags[flag]}`);
  return value;
}
const settings = {
  seconds: positive("seconds"),
  warmup: positive("warmup"),
  chats: positive("chats"),
  waves: positive("waves"),
  listConcurrency: positive("list-concurrency"),
  operationsConcurrency: positive("operations-concurrency"),
};
interface Setup {
  name: string;
  provider: Provider;
  replicas: number;
}
const knownSetups: Record<string, Setup> = {
  sqlite: { name: "SQLite, 1 replica", provider: "sqlite", replicas: 1 },
  postgresql: { name: "PostgreSQL, 1 replica", provider: "postgresql", replicas: 1 },
  "postgresql-2": { name: "PostgreSQL, 2 replicas", provider: "postgresql", replicas: 2 },
};
const setups = (flags.setups ?? "").split(",").map((name) => {
  const setup = knownSetups[name];
  if (!setup) throw new Error(`--setups takes ${Object.keys(knownSetups).join(", ")}; got ${name}`);
  return setup;
});

const network = "three_node";
const chatRequest: HttpRequestSpec = {
  method: "POST",
  path: `/api/v1/${network}/streaming_chat`,
  headers: { "content-type": "application/json" },
  body: Buffer.from(JSON.stringify({ user_message: { text: "What do benchmarks do?" }, chat_filter: { chat_filter_type: "MAXIMAL" } })),
};
const clientId = "bench";
// Out of reach, so admission decides but never refuses: what is measured is the work, not a limit.
const admission = {
  requests_per_window: 10_000_000,
  window_seconds: 60,
  client_active: 10_000_000,
  client_pending: 10_000_000,
  global_active: 10_000_000,
  global_executing: 100_000,
};
const policy = { rules: [{ id: "allow-load", effect: "allow", operations: ["agent.chat"] }] };
const operationBody = (idempotencyKey: string) => ({
  idempotency_key: idempotencyKey,
  operation: "agent.chat",
  target: { network },
  arguments: { text: "What do benchmarks do?" },
  reason: "load bench",
});

const cleanups: (() => Promise<void> | void)[] = [];
const scratch = mkdtempSync(path.join(os.tmpdir(), "axon-bench-load-"));
cleanups.push(() => rmSync(scratch, { recursive: true, force: true }));
const loadAtStart = os.loadavg();
const startedAt = new Date();
try {
  const llm = await startServerProcess<ScriptedLlmReady>(new URL("./serve-scripted-llm.ts", import.meta.url));
  cleanups.push(() => llm.stop());
  const secrets = { client: randomBytes(32).toString("base64url"), operator: randomBytes(32).toString("base64url") };
  const file = (name: string, text: string) => {
    writeFileSync(path.join(scratch, name), text, { mode: 0o600 });
    return path.join(scratch, name);
  };
  const axonEnv = {
    AGENT_MANIFEST_FILE: "bench/networks/manifest.hocon",
    AGENT_TOOL_PATH: "bench/coded_tools",
    ...llm.ready.env,
    AXON_CLIENTS_FILE: file("clients", `${clientId} = ${secrets.client}\n`),
    AXON_OPERATORS_FILE: file("operators", `${clientId} = ${secrets.operator}\n`),
    AXON_ADMISSION_FILE: file("admission.json", JSON.stringify(admission)),
    AXON_POLICY_FILE: file("policy.json", JSON.stringify(policy)),
    // Replicas sharing a database must share the sealing key.
    AXON_SEALING_KEY: randomBytes(32).toString("base64"),
  };

  let baselines: Baselines | undefined;
  const rawInserts = new Map<Provider, LoadResult & { cpuMicros: number; loadAverage: [number, number] }>();
  const results: SetupResult[] = [];
  // A setup that fails (a replica that dies, say) is reported as such; the others' figures still print.
  const failures: string[] = [];
  for (const setup of setups) {
    const setupCleanups: (() => Promise<void> | void)[] = [];
    try {
      let database: { name?: string; url: string };
      if (setup.provider === "sqlite") database = { url: `file:${path.join(scratch, `axon-${results.length}.db`)}` };
      else {
        const created = await createPostgresDatabase();
        setupCleanups.push(() => created.drop());
        database = created;
      }
      // Started one after the other: each applies the migrations at start-up.
      const replicas: ServerProcess<AxonReady>[] = [];
      for (let replica = 0; replica < setup.replicas; replica++) {
        const axon = await startServerProcess<AxonReady>(new URL("./serve-axon.ts", import.meta.url), {
          env: { BENCH_AXON_ENV: JSON.stringify({ ...axonEnv, DATABASE_URL: database.url }), BENCH_EVENT_LOOP_DELAY: "1" },
          nodeArgs: flags.profile ? ["--cpu-prof", `--cpu-prof-dir=${flags.profile}`] : [],
        });
        setupCleanups.push(() => axon.stop());
        replicas.push(axon);
      }
      const origins: Origin[] = replicas.map((axon) => ({ host: "127.0.0.1", port: axon.ready.port }));
      const grpcClients = origins.map((origin) => new RawGrpcClient(`${origin.host}:${origin.port}`));
      setupCleanups.push(() => grpcClients.forEach((client) => client.close()));
      const operations = new OperationTraffic(origins, secrets.client, `${setup.provider}-${setup.replicas}`, operationBody, settings.operationsConcurrency);
      setupCleanups.push(() => operations.close());
      const messages = await probeChat(origins, llm);

      // The baselines answer what Axon answered here; measured once, beside the first setup's phases.
      baselines ??= await measureBaselines(grpcClients[0]!, origins[0]!, llm, setupCleanups);
      await warmUp(grpcClients, origins, messages, operations);

      const phase = (name: PhaseName, kinds: { list?: boolean; chats?: boolean; operations?: boolean }) =>
        runPhase(name, kinds, { replicas, grpcClients, origins, messages, operations, llm, database: database.name });
      const phases: PhaseResult[] = [];
      phases.push(await phase("List alone", { list: true }));
      phases.push(await phase("chats alone", { chats: true }));
      phases.push(await phase("operations alone", { operations: true }));
      phases.push(await phase("List and operations", { list: true, operations: true }));
      phases.push(await phase("chats and operations", { chats: true, operations: true }));
      phases.push(await phase("all three at once", { list: true, chats: true, operations: true }));

      if (!rawInserts.has(setup.provider)) rawInserts.set(setup.provider, await measureRawInserts(setup.provider, database.url, scratch, setupCleanups));
      const rows = await countRows(setup.provider, database.url);
      results.push({ ...setup, phases, accepted: operations.accepted, operationRows: rows.operations });
    } catch (error) {
      failures.push(`${setup.name} failed: ${String(error)}`);
      process.stderr.write(`  ${failures.at(-1)}\n`);
    } finally {
      for (const cleanup of setupCleanups.reverse()) await cleanup();
    }
  }
  if (!baselines) throw new Error(failures.join("\n"));
  printReport({ settings, setups: results, failures, baselines, rawInserts, startedAt, loadAtStart, loadAtEnd: os.loadavg(), command: process.argv.slice(2).join(" ") });
} finally {
  for (const cleanup of cleanups.reverse()) await cleanup();
}

/** One chat first on each replica: every later chat must stream as many messages as this one did. */
async function probeChat(origins: Origin[], llm: ServerProcess<ScriptedLlmReady>): Promise<number> {
  let messages: number | undefined;
  for (const origin of origins) {
    const client = new KeepAliveHttpClient(origin, 1);
    const reply = await client.send(chatRequest);
    client.close();
    const lines = reply.body.toString("utf8").split("\n").filter((line) => line !== "");
    const error = chatError(reply.status, lines) ?? (messages === undefined || lines.length === messages ? undefined : `${lines.length} messages, not ${messages}`);
    if (error) throw new Error(`the probe chat failed: ${error}`);
    messages = lines.length;
  }
  await llm.sample(); // drops the probes' LLM requests from the record
  return messages!;
}

/**
 * The bare baselines of `bench` and `bench:chat`, fed with what Axon answered: a grpc-js server answering List's
 * bytes, and the chat replay making the same LLM calls and answering the same json-lines, with the same crowd.
 */
async function measureBaselines(
  axonGrpc: RawGrpcClient,
  axon: Origin,
  llm: ServerProcess<ScriptedLlmReady>,
  cleanupsOfSetup: (() => Promise<void> | void)[],
): Promise<Baselines> {
  const canned: CannedResponses = { grpc: { method: listMethod, messageBase64: (await axonGrpc.unary(listMethod, Buffer.alloc(0))).toString("base64") }, http: [] };
  const bare = await startServerProcess<BaselinesReady>(new URL("./serve-baselines.ts", import.meta.url), {
    env: { BENCH_CANNED_RESPONSES: JSON.stringify(canned) },
  });
  cleanupsOfSetup.push(() => bare.stop());

  const probe = new KeepAliveHttpClient(axon, 1);
  const reply = await probe.send(chatRequest);
  probe.close();
  const traffic = (await llm.sample()).extra as ScriptedLlmTraffic;
  if (traffic.received !== traffic.first.length) throw new Error(`the probe chat made ${traffic.received} LLM calls; the baseline replays up to 8`);
  const script: ChatBaselineScript = {
    path: chatRequest.path,
    contentType: reply.contentType,
    responseBase64: reply.body.toString("base64"),
    llmRequests: traffic.first.map((request) => request.body),
    llmEnv: llm.ready.env,
  };
  const replay = await startServerProcess<ChatBaselineReady>(new URL("./serve-chat-baseline.ts", import.meta.url), {
    env: { BENCH_CHAT_BASELINE: JSON.stringify(script) },
  });
  cleanupsOfSetup.push(() => replay.stop());
  const messages = reply.body.toString("utf8").split("\n").filter((line) => line !== "").length;

  const grpc = new RawGrpcClient(`127.0.0.1:${bare.ready.grpcPort}`);
  const replayOrigin = { host: "127.0.0.1", port: replay.ready.port };
  try {
    // CPU from the end of the warm-up, like the requests it is divided by.
    let before: ServerSample | undefined;
    const loadBefore = os.loadavg()[0]!;
    const listLoad = await runLoad(grpc.caller(listMethod, Buffer.alloc(0)), {
      ...loadOptions(settings.listConcurrency),
      beforeMeasuring: async () => void (before = await bare.sample()),
    });
    const after = await bare.sample();
    const list = { ...listLoad, cpuMicros: after.cpuMicros - before!.cpuMicros, after, loadAverage: [loadBefore, os.loadavg()[0]!] as [number, number] };
    await crowd([replayOrigin], messages, Math.min(100, settings.chats), 1); // warm-up
    const chats = await measured(replay, () => crowd([replayOrigin], messages, settings.chats, settings.waves));
    return { list, chats };
  } finally {
    grpc.close();
  }
}

/** Runs `work`, with the server's CPU, memory and the load average around it. */
async function measured<T extends { seconds: number }>(server: ServerProcess<unknown>, work: () => Promise<T>) {
  const loadBefore = os.loadavg()[0]!;
  const before = await server.sample();
  const result = await work();
  const after = await server.sample();
  return { ...result, cpuMicros: after.cpuMicros - before.cpuMicros, after, loadAverage: [loadBefore, os.loadavg()[0]!] as [number, number] };
}

function loadOptions(concurrency: number) {
  return { concurrency, warmupMs: settings.warmup * 1000, durationMs: settings.seconds * 1000 };
}

async function crowd(origins: Origin[], messages: number, size: number, waves: number): Promise<CrowdResult> {
  const chats = new ChatCrowd(origins, chatRequest, messages, size);
  try {
    return await chats.run(waves);
  } finally {
    chats.close();
  }
}

/** JIT, connections and the database's first pages, on every replica, before anything is measured. */
async function warmUp(grpcClients: RawGrpcClient[], origins: Origin[], messages: number, operations: OperationTraffic): Promise<void> {
  const stop = AbortSignal.timeout(settings.warmup * 1000);
  await Promise.all([runUntil(listCaller(grpcClients), settings.listConcurrency, stop), runUntil(operations.call, settings.operationsConcurrency, stop)]);
  await crowd(origins, messages, Math.min(100, settings.chats), 1);
}

interface PhaseContext {
  replicas: ServerProcess<AxonReady>[];
  grpcClients: RawGrpcClient[];
  origins: Origin[];
  messages: number;
  operations: OperationTraffic;
  llm: ServerProcess<ScriptedLlmReady>;
  /** The PostgreSQL database, whose backends' CPU is counted; none for SQLite. */
  database: string | undefined;
}

/**
 * One phase: the kinds of traffic asked for, at once, over the same window. With chats, the window is their waves
 * and the closed loops of List and operations stop when the last chat ends; without, it is --seconds.
 */
async function runPhase(name: PhaseName, kinds: { list?: boolean; chats?: boolean; operations?: boolean }, context: PhaseContext): Promise<PhaseResult> {
  const loadBefore = os.loadavg()[0]!;
  const serversBefore = await Promise.all(context.replicas.map((axon) => axon.sample()));
  // Each sample empties the LLM's record of requests, so the one after the phase counts the phase's alone.
  const llmBefore = (await context.llm.sample()).cpuMicros;
  const postgresBefore = context.database ? await backendCpuMicros(context.database) : undefined;
  const lockWaiters = context.database ? watchAdvisoryLockWaiters(context.database) : undefined;
  const benchBefore = process.cpuUsage();
  context.operations.reset();
  const started = performance.now();

  const stop = new AbortController();
  const list = kinds.list ? runUntil(listCaller(context.grpcClients), settings.listConcurrency, stop.signal) : undefined;
  const operations = kinds.operations ? runUntil(context.operations.call, settings.operationsConcurrency, stop.signal) : undefined;
  let chats: CrowdResult | undefined;
  if (kinds.chats) chats = await crowd(context.origins, context.messages, settings.chats, settings.waves);
  else await sleep(settings.seconds * 1000);
  stop.abort();
  const [listResult, operationsResult] = await Promise.all([list, operations]);

  const seconds = (performance.now() - started) / 1000;
  const bench = process.cpuUsage(benchBefore);
  const serversAfter = await Promise.all(context.replicas.map((axon) => axon.sample()));
  const llmAfter = await context.llm.sample();
  const postgresCpuMicros = postgresBefore ? backendCpuBetween(postgresBefore, await backendCpuMicros(context.database!)) : undefined;
  const admissionLockWaiters = await lockWaiters?.stop();
  const result: PhaseResult = {
    name,
    seconds,
    ...(listResult ? { list: listResult } : {}),
    ...(chats ? { chats } : {}),
    ...(operationsResult
      ? { operations: { ...operationsResult, submitMs: [...context.operations.submitMs], waits: context.operations.waits, failures: [...context.operations.failures] } }
      : {}),
    servers: context.replicas.map((_, index) => ({ before: serversBefore[index]!, after: serversAfter[index]! })),
    llmCpuMicros: llmAfter.cpuMicros - llmBefore,
    llmRequests: (llmAfter.extra as ScriptedLlmTraffic).received,
    benchCpuMicros: bench.user + bench.system,
    ...(postgresCpuMicros !== undefined ? { postgresCpuMicros } : {}),
    ...(admissionLockWaiters ? { admissionLockWaiters } : {}),
    loadAverage: [loadBefore, os.loadavg()[0]!],
  };
  process.stderr.write(`  ${name}: ${describe(result)}\n`);
  return result;
}

function describe(result: PhaseResult): string {
  const parts: string[] = [`${result.seconds.toFixed(1)} s`];
  if (result.list) parts.push(`List ${Math.round(result.list.requests / result.list.seconds)}/s (${result.list.errors} errors)`);
  if (result.chats) {
    const { errors, errorsAfterMs, firstError } = result.chats;
    const when = errors > 0 ? ` after ${(errorsAfterMs[0]! / 1000).toFixed(1)}–${(errorsAfterMs.at(-1)! / 1000).toFixed(1)} s, the first: ${firstError}` : "";
    parts.push(`${result.chats.timings.length} chats (${errors} errors${when})`);
  }
  if (result.operations) {
    const { requests, errors, failures } = result.operations;
    parts.push(`${requests} operations (${errors} errors${failures.length > 0 ? `: ${failures.join("; ")}` : ""})`);
  }
  parts.push(`server RSS peak ${result.servers.map((server) => Math.round(server.after.peakRssBytes / 1048576)).join("/")} MB`);
  return parts.join(", ");
}

/**
 * What one submit writes, as raw prepared SQL through the driver Axon's adapter uses, on a fresh database of the
 * same engine (bench/raw-submit-store.ts, as in `bench:operations`), with the operations' concurrency.
 */
async function measureRawInserts(provider: Provider, axonUrl: string, folder: string, cleanupsOfSetup: (() => Promise<void> | void)[]) {
  let url = `file:${path.join(folder, "raw.db")}`;
  let name: string | undefined;
  if (provider === "postgresql") {
    const database = await createPostgresDatabase();
    cleanupsOfSetup.push(() => database.drop());
    ({ url, name } = database);
  }
  const raw = await openRawSubmitStore(provider, url, await readSubmitRows(provider, axonUrl, clientId), settings.operationsConcurrency);
  cleanupsOfSetup.push(() => raw.close());
  let sequence = 0;
  const loadBefore = os.loadavg()[0]!;
  let postgresBefore = new Map<number, number>();
  let benchBefore = process.cpuUsage();
  const result = await runLoad(() => raw.insert(clientId, `raw-${sequence++}`), {
    ...loadOptions(settings.operationsConcurrency),
    beforeMeasuring: async () => {
      if (name) postgresBefore = await backendCpuMicros(name);
      benchBefore = process.cpuUsage();
    },
  });
  const bench = process.cpuUsage(benchBefore);
  const postgres = name ? backendCpuBetween(postgresBefore, await backendCpuMicros(name)) : 0;
  process.stderr.write(`  raw insert ${provider}: ${Math.round(result.requests / result.seconds)}/s\n`);
  // The driver runs in this process, so its CPU is the bench's; PostgreSQL's backends do the rest.
  return { ...result, cpuMicros: bench.user + bench.system + postgres, loadAverage: [loadBefore, os.loadavg()[0]!] as [number, number] };
}
