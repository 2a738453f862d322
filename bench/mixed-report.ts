import type { Provider } from "../src/store/database.js";
import { percentile, type LoadResult } from "./load.js";
import type { CrowdResult } from "./load-traffic.js";
import { machine } from "./machine.js";
import type { EventLoopDelay } from "./serve-axon.js";
import type { ServerSample } from "./server-process.js";

/* The Markdown `npm run bench:load` prints: the baselines, each kind of traffic by setup and phase, the servers. */

export type PhaseName = "List alone" | "chats alone" | "operations alone" | "List and operations" | "chats and operations" | "all three at once";
type LoopResult = Omit<LoadResult, "clientCores">;

export interface PhaseResult {
  name: PhaseName;
  seconds: number;
  list?: LoopResult;
  chats?: CrowdResult;
  /** Latency = submit to the terminal state seen by the long poll; `submitMs` = the submit's round trip alone. */
  operations?: LoopResult & { submitMs: number[]; waits: number; failures: string[] };
  /** Each replica's sample at the start and at the end of the window (peaks and event-loop delay cover the window). */
  servers: { before: ServerSample; after: ServerSample }[];
  llmCpuMicros: number;
  llmRequests: number;
  benchCpuMicros: number;
  postgresCpuMicros?: number;
  /** Backends waiting on the admission lock (an advisory lock), sampled every 200 ms: peak and mean. */
  admissionLockWaiters?: { peak: number; mean: number };
  loadAverage: [number, number];
}

export interface SetupResult {
  name: string;
  provider: Provider;
  replicas: number;
  phases: PhaseResult[];
  /** Submits answered 200/202 over the setup's life, and the operations its database holds at the end. */
  accepted: number;
  operationRows: number;
}

interface Measured {
  cpuMicros: number;
  loadAverage: [number, number];
}

export interface Baselines {
  list: LoadResult & Measured & { after: ServerSample };
  chats: CrowdResult & Measured & { after: ServerSample };
}

export interface Report {
  settings: { seconds: number; warmup: number; chats: number; waves: number; listConcurrency: number; operationsConcurrency: number };
  setups: SetupResult[];
  /** Setups that did not finish, with why. */
  failures: string[];
  baselines: Baselines;
  rawInserts: Map<Provider, LoadResult & Measured>;
  startedAt: Date;
  loadAtStart: number[];
  loadAtEnd: number[];
  command: string;
}

export function printReport(report: Report): void {
  const { settings, setups, baselines, rawInserts } = report;
  const loads = (values: number[]) => values.map((value) => value.toFixed(2)).join(", ");
  console.log(`Command: \`npm run bench:load${report.command ? ` -- ${report.command}` : ""}\``);
  console.log(`Date: ${report.startedAt.toISOString()} to ${new Date().toISOString()}`);
  console.log(`Machine: ${machine()}`);
  console.log(`Load average (1, 5, 15 min): ${loads(report.loadAtStart)} at the start, ${loads(report.loadAtEnd)} at the end`);
  console.log(
    `Load: List ${settings.listConcurrency} in flight (gRPC, one HTTP/2 connection per replica); ${settings.chats} REST streaming chats opened at once ` +
      `(${settings.chats} sockets), ${settings.waves} wave(s) per chat phase; ${settings.operationsConcurrency} operations in flight (submit, then long-poll ` +
      `to the end); List-alone, operations-alone and baseline windows ${settings.seconds} s after a ${settings.warmup} s warm-up`,
  );
  console.log("");

  const bareList = baselines.list;
  const bareChats = baselines.chats;
  const bareListFigures = latencies(bareList.latenciesMs);
  const bareChatTotals = latencies(bareChats.timings.map((timing) => timing.totalMs));
  console.log("Bare baselines, same run:");
  console.log("");
  console.log("| Baseline | load | per s | p50 ms | p90 ms | p99 ms | max ms | CPU µs per request | errors | load average |");
  console.log("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |");
  console.log(
    `| bare @grpc/grpc-js List | ${settings.listConcurrency} in flight | ${count(bareList.requests / bareList.seconds)} | ${row(bareListFigures)} | ` +
      `${(bareList.cpuMicros / bareList.requests).toFixed(0)} | ${bareList.errors} | ${range(bareList.loadAverage)} |`,
  );
  console.log(
    `| bare chat replay (node:http + openai SDK), whole chat | ${settings.chats} at once | ${count(bareChats.timings.length / bareChats.seconds)} | ${row(bareChatTotals)} | ` +
      `${(bareChats.cpuMicros / bareChats.timings.length).toFixed(0)} | ${bareChats.errors} | ${range(bareChats.loadAverage)} |`,
  );
  for (const [provider, raw] of rawInserts) {
    const driver = provider === "sqlite" ? "better-sqlite3, in the bench process" : `pg pool of ${settings.operationsConcurrency} + backends`;
    console.log(
      `| raw insert of a submit's rows, ${provider === "sqlite" ? "SQLite" : "PostgreSQL"} (${driver}) | ${settings.operationsConcurrency} in flight | ` +
        `${count(raw.requests / raw.seconds)} | ${row(latencies(raw.latenciesMs))} | ${(raw.cpuMicros / raw.requests).toFixed(0)} | ${raw.errors} | ${range(raw.loadAverage)} |`,
    );
  }
  console.log("");

  console.log("List (gRPC `ConciergeService/List`):");
  console.log("");
  console.log("| Setup | Phase | req/s | p50 ms | p90 ms | p99 ms | max ms | errors | ÷ bare: req/s | p50 | p99 |");
  console.log("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const setup of setups) {
    for (const phase of setup.phases) {
      if (!phase.list) continue;
      const figures = latencies(phase.list.latenciesMs);
      const rate = phase.list.requests / phase.list.seconds;
      console.log(
        `| ${setup.name} | ${phase.name} | ${count(rate)} | ${row(figures)} | ${phase.list.errors} | ${times(rate, bareList.requests / bareList.seconds)} | ` +
          `${times(figures.p50, bareListFigures.p50)} | ${times(figures.p99, bareListFigures.p99)} |`,
      );
    }
  }
  console.log("");

  console.log(`Streaming chats (REST, MAXIMAL, ${settings.chats} opened at once):`);
  console.log("");
  console.log(
    "| Setup | Phase | chats | chats/s | first message p50 ms | p90 | p99 | max | whole chat p50 ms | p90 | p99 | max | errors | ÷ bare replay: chats/s | whole chat p50 |",
  );
  console.log("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
  console.log(
    `| bare chat replay | alone | ${bareChats.timings.length} | ${count(bareChats.timings.length / bareChats.seconds)} | ${row(bareChatTotals)} | ` +
      `${row(bareChatTotals)} | ${bareChats.errors} | | |`,
  );
  for (const setup of setups) {
    for (const phase of setup.phases) {
      if (!phase.chats) continue;
      const first = latencies(phase.chats.timings.map((timing) => timing.firstMessageMs));
      const total = latencies(phase.chats.timings.map((timing) => timing.totalMs));
      const rate = phase.chats.timings.length / phase.chats.seconds;
      console.log(
        `| ${setup.name} | ${phase.name} | ${phase.chats.timings.length} | ${count(rate)} | ${row(first)} | ${row(total)} | ${phase.chats.errors} | ` +
          `${times(rate, bareChats.timings.length / bareChats.seconds)} | ${times(total.p50, bareChatTotals.p50)} |`,
      );
    }
  }
  console.log("");

  console.log("Agent Operations (`agent.chat` allowed by the policy: submit, executed by a worker, long-polled to `succeeded`):");
  console.log("");
  console.log(
    "| Setup | Phase | operations/s | submit p50 ms | submit p99 ms | to succeeded p50 ms | p90 | p99 | max | waits per op | errors | ÷ raw inserts: per s | submit p50 | waiting on the admission lock, mean (peak) |",
  );
  console.log("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const setup of setups) {
    const raw = rawInserts.get(setup.provider)!;
    const rawFigures = latencies(raw.latenciesMs);
    for (const phase of setup.phases) {
      const operations = phase.operations;
      if (!operations) continue;
      const submit = latencies(operations.submitMs);
      const rate = operations.requests / operations.seconds;
      console.log(
        `| ${setup.name} | ${phase.name} | ${count(rate)} | ${ms(submit.p50)} | ${ms(submit.p99)} | ${row(latencies(operations.latenciesMs))} | ` +
          `${(operations.waits / Math.max(1, operations.requests + operations.errors)).toFixed(2)} | ${operations.errors} | ${times(rate, raw.requests / raw.seconds)} | ` +
          `${times(submit.p50, rawFigures.p50)} | ${waiters(phase)} |`,
      );
    }
  }
  console.log("");

  console.log("The servers, per phase (each replica's figure, separated by /):");
  console.log("");
  console.log(
    "| Setup | Phase | window s | Axon cores | Axon CPU µs per request, alone | LLM cores | PostgreSQL backends cores | bench process cores | Axon RSS start → peak MB | Axon heap peak MB | event-loop delay p50 / p99 / max ms | load average |",
  );
  console.log("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |");
  for (const setup of setups) {
    for (const phase of setup.phases) {
      const cores = phase.servers.map((server) => ((server.after.cpuMicros - server.before.cpuMicros) / 1e6 / phase.seconds).toFixed(2)).join(" / ");
      const perRequest = kindsOf(phase) > 1 ? "–" : `${cpuPerRequest(phase).toFixed(0)} per ${unitOf(phase)}`;
      const rss = phase.servers.map((server) => `${mb(server.before.rssBytes)} → ${mb(server.after.peakRssBytes)}`).join(" / ");
      const heap = phase.servers.map((server) => mb(server.after.peakHeapUsedBytes)).join(" / ");
      const delay = phase.servers
        .map((server) => server.after.extra as EventLoopDelay)
        .map((figures) => `${ms(figures.p50Ms)} / ${ms(figures.p99Ms)} / ${ms(figures.maxMs)}`)
        .join("; ");
      const postgres = phase.postgresCpuMicros === undefined ? "–" : (phase.postgresCpuMicros / 1e6 / phase.seconds).toFixed(2);
      console.log(
        `| ${setup.name} | ${phase.name} | ${phase.seconds.toFixed(1)} | ${cores} | ${perRequest} | ${(phase.llmCpuMicros / 1e6 / phase.seconds).toFixed(2)} | ${postgres} | ` +
          `${(phase.benchCpuMicros / 1e6 / phase.seconds).toFixed(2)} | ${rss} | ${heap} | ${delay} | ${range(phase.loadAverage)} |`,
      );
    }
  }
  console.log("");

  console.log("With operations at full rate (List, then chats, each beside the operations loop, against each alone, same setup):");
  console.log("");
  console.log("| Setup | List p50 | List p99 | chat first message p50 | p99 | whole chat p50 | p99 | operation p50, beside List | beside chats |");
  console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const setup of setups) {
    const phase = (name: PhaseName) => setup.phases.find((candidate) => candidate.name === name)!;
    const [list, chats, operations] = [phase("List alone"), phase("chats alone"), phase("operations alone")];
    const [listBeside, chatsBeside] = [phase("List and operations"), phase("chats and operations")];
    const first = (result: PhaseResult) => latencies(result.chats!.timings.map((timing) => timing.firstMessageMs));
    const whole = (result: PhaseResult) => latencies(result.chats!.timings.map((timing) => timing.totalMs));
    const [listAlone, listWith] = [latencies(list.list!.latenciesMs), latencies(listBeside.list!.latenciesMs)];
    const operationAlone = latencies(operations.operations!.latenciesMs).p50;
    console.log(
      `| ${setup.name} | ${times(listWith.p50, listAlone.p50)} | ${times(listWith.p99, listAlone.p99)} | ` +
        `${times(first(chatsBeside).p50, first(chats).p50)} | ${times(first(chatsBeside).p99, first(chats).p99)} | ` +
        `${times(whole(chatsBeside).p50, whole(chats).p50)} | ${times(whole(chatsBeside).p99, whole(chats).p99)} | ` +
        `${times(latencies(listBeside.operations!.latenciesMs).p50, operationAlone)} | ${times(latencies(chatsBeside.operations!.latenciesMs).p50, operationAlone)} |`,
    );
  }
  console.log("");

  console.log("What mixing costs (all three at once against each kind alone, same setup):");
  console.log("");
  console.log(
    "| Setup | Axon CPU in the mixed window, s | the same requests at their CPU alone, s | measured ÷ predicted | List p50 | chat first message p50 | whole chat p50 | operation p50 |",
  );
  console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const setup of setups) {
    const phase = (name: PhaseName) => setup.phases.find((candidate) => candidate.name === name)!;
    const mixed = phase("all three at once");
    const [list, chats, operations] = [phase("List alone"), phase("chats alone"), phase("operations alone")];
    const predicted =
      mixed.list!.requests * cpuPerRequest(list) + mixed.chats!.timings.length * cpuPerRequest(chats) + mixed.operations!.requests * cpuPerRequest(operations);
    const measured = serverCpu(mixed);
    const p50 = (values: number[]) => latencies(values).p50;
    console.log(
      `| ${setup.name} | ${(measured / 1e6).toFixed(1)} | ${(predicted / 1e6).toFixed(1)} | ${times(measured, predicted)} | ` +
        `${times(p50(mixed.list!.latenciesMs), p50(list.list!.latenciesMs))} | ` +
        `${times(p50(mixed.chats!.timings.map((timing) => timing.firstMessageMs)), p50(chats.chats!.timings.map((timing) => timing.firstMessageMs)))} | ` +
        `${times(p50(mixed.chats!.timings.map((timing) => timing.totalMs)), p50(chats.chats!.timings.map((timing) => timing.totalMs)))} | ` +
        `${times(p50(mixed.operations!.latenciesMs), p50(operations.operations!.latenciesMs))} |`,
    );
  }
  console.log("");
  for (const setup of setups) {
    for (const phase of setup.phases) {
      const { chats, operations } = phase;
      if (chats && chats.errors > 0) {
        const when = `${ms(chats.errorsAfterMs[0]!)}–${ms(chats.errorsAfterMs.at(-1)!)} ms`;
        console.log(`Errors, ${setup.name}, ${phase.name}: ${chats.errors} chats failed ${when} after their request; the first: ${chats.firstError}.`);
      }
      if (operations && operations.errors > 0) {
        console.log(`Errors, ${setup.name}, ${phase.name}: ${operations.errors} operations failed: ${operations.failures.join("; ")}.`);
      }
    }
  }
  for (const failure of report.failures) console.log(`${failure}.`);
  for (const setup of setups) {
    const match = setup.accepted === setup.operationRows ? "one row per accepted submit" : "NOT one row per accepted submit";
    console.log(`${setup.name}: ${setup.accepted} submits accepted (warm-up included), the database holds ${setup.operationRows} operations (${match}).`);
  }
}

function waiters(phase: PhaseResult): string {
  const sampled = phase.admissionLockWaiters;
  return sampled ? `${sampled.mean.toFixed(1)} (${sampled.peak})` : "–";
}

/** All replicas' CPU over a phase, in microseconds. */
function serverCpu(phase: PhaseResult): number {
  return phase.servers.reduce((total, server) => total + server.after.cpuMicros - server.before.cpuMicros, 0);
}

/** Axon's CPU per request of a phase that ran one kind of traffic. */
function cpuPerRequest(phase: PhaseResult): number {
  const requests = phase.list?.requests ?? phase.chats?.timings.length ?? phase.operations?.requests ?? Number.NaN;
  return serverCpu(phase) / requests;
}

/** How many kinds of traffic a phase ran. */
function kindsOf(phase: PhaseResult): number {
  return [phase.list, phase.chats, phase.operations].filter((kind) => kind !== undefined).length;
}

function unitOf(phase: PhaseResult): string {
  return phase.list ? "List" : phase.chats ? "chat" : "operation";
}

function latencies(values: number[]) {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: percentile(sorted, 0.5), p90: percentile(sorted, 0.9), p99: percentile(sorted, 0.99), max: sorted.at(-1) ?? Number.NaN };
}

function row(figures: { p50: number; p90: number; p99: number; max: number }): string {
  return [figures.p50, figures.p90, figures.p99, figures.max].map(ms).join(" | ");
}

/** Milliseconds with as many decimals as matter at their size. */
function ms(value: number): string {
  if (!Number.isFinite(value)) return "–";
  return value < 10 ? value.toFixed(2) : value < 100 ? value.toFixed(1) : Math.round(value).toLocaleString("en-US");
}

function count(value: number): string {
  return value < 100 ? value.toFixed(1) : Math.round(value).toLocaleString("en-US");
}

function times(value: number, reference: number): string {
  return `${(value / reference).toFixed(2)}×`;
}

function range([start, end]: [number, number]): string {
  return `${start.toFixed(2)} → ${end.toFixed(2)}`;
}

function mb(bytes: number): string {
  return (bytes / 1024 / 1024).toFixed(0);
}
