import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import type { Provider } from "../src/store/database.js";
import { KeepAliveHttpClient } from "./clients.js";
import { percentile, runLoad, type Call, type LoadResult } from "./load.js";
import { backendCpuBetween, backendCpuMicros, createPostgresDatabase } from "./postgres.js";
import { countRows, openRawSubmitStore, readSubmitRows, type RowCounts } from "./raw-submit-store.js";
import type { AxonReady } from "./serve-axon.js";
import { startServerProcess, type ServerProcess } from "./server-process.js";

/*
 * `npm run bench:operations`: Agent Operations submits over REST (`POST /api/agent/v1/operations`), new and replayed,
 * on SQLite and on PostgreSQL. The policy denies the operation, so each submit is decided and stored (terminal,
 * HTTP 200) and nothing executes: the figures are the submit path (auth, validation, idempotency, admission
 * counting, policy, the Operation + Event + AuditRecord rows). Compared in the same run with the same rows written
 * (and read) as raw prepared SQL through the same driver on a fresh database of the same schema. Axon runs in its own
 * process (bench/serve-axon.ts); the raw baseline runs in this one. Prints Markdown for docs/benchmarks.md.
 */

const { values: flags } = parseArgs({
  options: {
    seconds: { type: "string", default: "4" },
    warmup: { type: "string", default: "1" },
    rounds: { type: "string", default: "2" },
    concurrency: { type: "string", default: "16" },
    databases: { type: "string", default: "sqlite,postgresql" },
    // Writes a V8 CPU profile of each Axon process to this folder (open it in Chrome DevTools or speedscope).
    profile: { type: "string" },
  },
});
function positive(flag: "seconds" | "warmup" | "rounds" | "concurrency"): number {
  const value = Number(flags[flag]);
  if (!(value > 0)) throw new Error(`--${flag} must be a positive number, got ${flags[flag]}`);
  return value;
}
const load = { durationMs: positive("seconds") * 1000, warmupMs: positive("warmup") * 1000, concurrency: positive("concurrency") };
const rounds = positive("rounds");
const providers = (flags.databases ?? "").split(",").map((name) => {
  if (name !== "sqlite" && name !== "postgresql") throw new Error(`--databases takes sqlite and/or postgresql, got ${name}`);
  return name as Provider;
});

const clientId = "bench";
const admission = {
  requests_per_window: 10_000_000,
  window_seconds: 60,
  client_active: 10_000_000,
  client_pending: 10_000_000,
  global_active: 10_000_000,
  global_executing: 100_000,
};
const policy = { rules: [{ id: "deny-bench", effect: "deny", operations: ["agent.chat"] }] };
const submitPath = "/api/agent/v1/operations";
const submitBody = (idempotencyKey: string) =>
  Buffer.from(JSON.stringify({ idempotency_key: idempotencyKey, operation: "agent.chat", target: { network: "hello_world" }, arguments: { text: "hi" }, reason: "bench" }));

type LoadName = "Axon new" | "raw insert" | "Axon replay" | "raw select";
/** Each Axon load beside its baseline; within a round they alternate A B, then B A in the next. */
const pairs: [LoadName, LoadName][] = [
  ["Axon new", "raw insert"],
  ["Axon replay", "raw select"],
];

const databaseNames: Record<Provider, string> = { sqlite: "SQLite", postgresql: "PostgreSQL" };
const loadLabels: Record<LoadName, string> = {
  "Axon new": "Axon submit, new key",
  "raw insert": "raw insert (same rows, 1 transaction)",
  "Axon replay": "Axon submit, replayed key",
  "raw select": "raw select by client + key",
};

interface Measured extends LoadResult {
  /** CPU of the process doing the work: Axon's for Axon loads, this process's (the driver) for raw ones. */
  workerCpuMicros: number;
  /** This process's CPU: the HTTP client for Axon loads, the driver itself for raw ones. */
  benchCpuMicros: number;
  /** CPU of the PostgreSQL backends serving the database under load (a floor; none for SQLite). */
  postgresCpuMicros?: number;
}

interface DatabaseResult {
  provider: Provider;
  runs: Record<LoadName, Measured[]>;
  /** Distinct keys submitted new (probe included) and how often the replay loop went through them. */
  newKeys: number;
  replaysPerKey: number;
  axonRows: RowCounts;
  rawRows: RowCounts;
  rawInserts: number;
  durability: string;
}

printHeader();
const results: DatabaseResult[] = [];
for (const provider of providers) results.push(await benchDatabase(provider));
printTables(results);
console.log("");
console.log(`Load average at end (1 min): ${os.loadavg()[0]!.toFixed(2)}`);

async function benchDatabase(provider: Provider): Promise<DatabaseResult> {
  const cleanups: (() => Promise<void> | void)[] = [];
  try {
    const dir = mkdtempSync(path.join(os.tmpdir(), "axon-bench-operations-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const secret = randomBytes(32).toString("base64url");
    const file = (name: string, text: string) => {
      writeFileSync(path.join(dir, name), text, { mode: 0o600 });
      return path.join(dir, name);
    };

    const databases = await Promise.all(
      ["axon", "raw"].map(async (name) => {
        if (provider === "sqlite") return { name, url: `file:${path.join(dir, `${name}.db`)}` };
        const database = await createPostgresDatabase();
        cleanups.push(() => database.drop());
        return database;
      }),
    );
    const [axonDatabase, rawDatabase] = databases as [(typeof databases)[number], (typeof databases)[number]];

    const axon = await startServerProcess<AxonReady>(new URL("./serve-axon.ts", import.meta.url), {
      env: {
        BENCH_AXON_ENV: JSON.stringify({
          AXON_CLIENTS_FILE: file("clients", `${clientId} = ${secret}\n`),
          AXON_OPERATORS_FILE: file("operators", `${clientId} = ${randomBytes(32).toString("base64url")}\n`),
          AXON_ADMISSION_FILE: file("admission.json", JSON.stringify(admission)),
          AXON_POLICY_FILE: file("policy.json", JSON.stringify(policy)),
          DATABASE_URL: axonDatabase.url,
        }),
      },
      nodeArgs: flags.profile ? ["--cpu-prof", `--cpu-prof-dir=${flags.profile}`] : [],
    });
    cleanups.push(() => axon.stop());
    const http = new KeepAliveHttpClient({ host: "127.0.0.1", port: axon.ready.port }, load.concurrency);
    cleanups.push(() => http.close());
    const submit = (idempotencyKey: string) =>
      http.send({
        method: "POST",
        path: submitPath,
        headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
        body: submitBody(idempotencyKey),
      });

    // One submit and its replay first: both must answer 200 with the same denied operation (REST answers the
    // Operation itself), or nothing is measured.
    const probes = [await submit("probe"), await submit("probe")];
    const [created, replayed] = probes.map((reply) => JSON.parse(reply.body.toString()) as { id?: string; state?: string });
    if (probes.some((reply) => reply.status !== 200) || created?.state !== "denied" || !created.id || replayed?.id !== created.id) {
      throw new Error(`the probe submit and replay did not answer 200 with one denied operation:\n${probes.map((reply) => `${reply.status} ${reply.body.toString().slice(0, 500)}`).join("\n")}`);
    }

    const raw = await openRawSubmitStore(provider, rawDatabase.url, await readSubmitRows(provider, axonDatabase.url, clientId), load.concurrency);
    cleanups.push(() => raw.close());
    const axonKeys = ["probe"];
    const rawKeys: string[] = [];
    let sequence = 0;
    let replays = 0;
    let selects = 0;
    const calls: Record<LoadName, Call> = {
      "Axon new": async () => {
        const key = `new-${sequence++}`;
        const reply = await submit(key);
        if (reply.status !== 200) throw new Error(`HTTP ${reply.status}: ${reply.body.toString().slice(0, 300)}`);
        axonKeys.push(key);
      },
      "Axon replay": async () => {
        const reply = await submit(axonKeys[replays++ % axonKeys.length]!);
        if (reply.status !== 200) throw new Error(`HTTP ${reply.status}: ${reply.body.toString().slice(0, 300)}`);
      },
      "raw insert": async () => {
        const key = `new-${sequence++}`;
        await raw.insert(clientId, key);
        rawKeys.push(key);
      },
      "raw select": () => raw.select(clientId, rawKeys[selects++ % rawKeys.length]!),
    };

    const runs: Record<LoadName, Measured[]> = { "Axon new": [], "raw insert": [], "Axon replay": [], "raw select": [] };
    for (let round = 0; round < rounds; round++) {
      for (const pair of pairs) {
        for (const name of round % 2 === 0 ? pair : [...pair].reverse()) {
          const database = name.startsWith("Axon") ? axonDatabase : rawDatabase;
          const measured = await measure(calls[name], name.startsWith("Axon") ? axon : undefined, provider === "postgresql" ? database.name : undefined);
          runs[name].push(measured);
          const rate = Math.round(measured.requests / measured.seconds);
          process.stderr.write(`  ${provider} ${name} round ${round + 1}: ${rate}/s, ${measured.errors} errors\n`);
        }
      }
    }

    return {
      provider,
      runs,
      newKeys: axonKeys.length,
      replaysPerKey: replays / axonKeys.length,
      axonRows: await countRows(provider, axonDatabase.url),
      rawRows: await raw.counts(),
      rawInserts: rawKeys.length,
      durability: await raw.durability(),
    };
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup();
  }
}

async function measure(call: Call, server: ServerProcess<unknown> | undefined, postgresDatabase: string | undefined): Promise<Measured> {
  let serverBefore = 0;
  let postgresBefore = new Map<number, number>();
  let benchBefore = process.cpuUsage();
  const result = await runLoad(call, {
    ...load,
    beforeMeasuring: async () => {
      serverBefore = (await server?.cpuMicros()) ?? 0;
      if (postgresDatabase) postgresBefore = await backendCpuMicros(postgresDatabase);
      benchBefore = process.cpuUsage();
    },
  });
  const bench = process.cpuUsage(benchBefore);
  const benchCpuMicros = bench.user + bench.system;
  const serverAfter = (await server?.cpuMicros()) ?? 0;
  return {
    ...result,
    benchCpuMicros,
    workerCpuMicros: server ? serverAfter - serverBefore : benchCpuMicros,
    ...(postgresDatabase ? { postgresCpuMicros: backendCpuBetween(postgresBefore, await backendCpuMicros(postgresDatabase)) } : {}),
  };
}

function printHeader(): void {
  const cpus = os.cpus();
  const args = process.argv.slice(2).join(" ");
  console.log(`Command: \`npm run bench:operations${args ? ` -- ${args}` : ""}\``);
  console.log(`Date: ${new Date().toISOString()}`);
  console.log(`Machine: ${cpus.length} × ${cpus[0]?.model.trim() ?? "unknown CPU"}, ${os.platform()} ${os.release()}, Node ${process.version}`);
  // Other work on the machine takes cores from every process here; the load average before and after shows if there was any.
  console.log(`Load average at start (1 min): ${os.loadavg()[0]!.toFixed(2)}`);
  console.log(
    `Load: ${load.concurrency} in flight (${load.concurrency} keep-alive HTTP/1.1 sockets to Axon; a pool of ${load.concurrency} for raw pg), ` +
      `${flags.warmup} s warm-up then ${flags.seconds} s measured, ${rounds} rounds alternating Axon and raw`,
  );
  console.log("");
}

function combine(runs: Measured[]) {
  const seconds = sum(runs.map((run) => run.seconds));
  const operations = sum(runs.map((run) => run.requests));
  const latencies = runs.flatMap((run) => run.latenciesMs).sort((a, b) => a - b);
  const postgres = runs.every((run) => run.postgresCpuMicros !== undefined) ? sum(runs.map((run) => run.postgresCpuMicros!)) : undefined;
  return {
    perSecond: operations / seconds,
    perRound: runs.map((run) => run.requests / run.seconds),
    p50: percentile(latencies, 0.5),
    p90: percentile(latencies, 0.9),
    p99: percentile(latencies, 0.99),
    workerMicros: sum(runs.map((run) => run.workerCpuMicros)) / operations,
    benchMicros: sum(runs.map((run) => run.benchCpuMicros)) / operations,
    postgresMicros: postgres === undefined ? undefined : postgres / operations,
    workerCores: sum(runs.map((run) => run.workerCpuMicros)) / 1e6 / seconds,
    errors: sum(runs.map((run) => run.errors)),
  };
}

function printTables(results: DatabaseResult[]): void {
  console.log(
    "| Database | Load | ops/s (per round) | p50 ms | p90 ms | p99 ms | worker CPU µs/op | worker cores | bench process CPU µs/op | PostgreSQL backends CPU µs/op | errors |",
  );
  console.log("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const result of results) {
    (Object.keys(loadLabels) as LoadName[]).forEach((name, index) => {
      const figures = combine(result.runs[name]);
      const perRound = figures.perRound.map((value) => Math.round(value).toLocaleString("en-US")).join(", ");
      console.log(
        `| ${index === 0 ? databaseNames[result.provider] : ""} | ${loadLabels[name]} | ${Math.round(figures.perSecond).toLocaleString("en-US")} (${perRound}) | ` +
          `${ms(figures.p50)} | ${ms(figures.p90)} | ${ms(figures.p99)} | ${figures.workerMicros.toFixed(0)} | ${figures.workerCores.toFixed(2)} | ` +
          `${figures.benchMicros.toFixed(0)} | ${figures.postgresMicros === undefined ? "–" : figures.postgresMicros.toFixed(0)} | ${figures.errors} |`,
      );
    });
  }
  console.log("");
  console.log(
    "| Database | Axon / raw: new submits per s | p50 | p99 | worker CPU per op | 1 ÷ throughput, Axon − raw | Axon / raw: replays per s | p50 | p99 | worker CPU per op |",
  );
  console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const result of results) {
    const created = combine(result.runs["Axon new"]);
    const inserted = combine(result.runs["raw insert"]);
    const replayed = combine(result.runs["Axon replay"]);
    const selected = combine(result.runs["raw select"]);
    // With writes serialized, 1 / throughput is each submit's share of the writer: what Axon adds to the bare write.
    const extraMicros = 1e6 / created.perSecond - 1e6 / inserted.perSecond;
    console.log(
      `| ${databaseNames[result.provider]} | ${ratio(created.perSecond, inserted.perSecond)} | ${ratio(created.p50, inserted.p50)} | ${ratio(created.p99, inserted.p99)} | ` +
        `${ratio(created.workerMicros, inserted.workerMicros)} | ${(1e6 / created.perSecond).toFixed(0)} − ${(1e6 / inserted.perSecond).toFixed(0)} = +${extraMicros.toFixed(0)} µs | ` +
        `${ratio(replayed.perSecond, selected.perSecond)} | ${ratio(replayed.p50, selected.p50)} | ${ratio(replayed.p99, selected.p99)} | ${ratio(replayed.workerMicros, selected.workerMicros)} |`,
    );
  }
  console.log("");
  for (const result of results) console.log(`${databaseNames[result.provider]} commits: ${result.durability} (Axon's connections and the raw ones alike).`);
  console.log("");
  for (const result of results) {
    const { axonRows, rawRows } = result;
    const expected = result.newKeys;
    const complete = [axonRows.operations, axonRows.events, axonRows.audits, axonRows.admitted].every((count) => count === expected);
    console.log(
      `${databaseNames[result.provider]}: ${expected.toLocaleString("en-US")} new submits answered 200; Axon's database holds ` +
        `${axonRows.operations} operations, ${axonRows.events} events, ${axonRows.audits} audit records, ${axonRows.admitted} admitted` +
        `${complete ? " (one of each per submit)" : " (NOT one of each per submit)"}; replays went through the keys ${result.replaysPerKey.toFixed(2)} times; ` +
        `the raw database holds ${rawRows.operations} operations, ${rawRows.events} events, ${rawRows.audits} audit records for ${result.rawInserts} inserts.`,
    );
  }
}

function ratio(axon: number, raw: number): string {
  return `${(axon / raw).toFixed(2)}×`;
}

function ms(value: number): string {
  return value.toFixed(2);
}

function sum(values: number[]): number {
  return values.reduce((total, value) => total + value, 0);
}
