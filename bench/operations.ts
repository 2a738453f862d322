import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import type { Provider } from "../src/store/database.js";
import { KeepAliveHttpClient } from "./clients.js";
import { percentile, runLoad, type Call, type LoadResult } from "./load.js";
import { machine } from "./machine.js";
import { backendCpuBetween, backendCpuMicros, createPostgresDatabase } from "./postgres.js";
import { approvalToClaimMs, countRows, openRawSubmitStore, readSubmitRows, type RowCounts } from "./raw-submit-store.js";
import type { AxonReady } from "./serve-axon.js";
import { startServerProcess, type ServerProcess } from "./server-process.js";
import { probeSubmissionLock, type LockProbe } from "./submission-lock.js";

/*
 * `npm run bench:operations`: Agent Operations submits over REST (`POST /api/agent/v1/operations`), new and replayed,
 * on SQLite and on PostgreSQL (there with one replica and with two). The policy denies the operation, so each submit is
 * decided and stored (terminal, HTTP 200) and nothing executes: the figures are the submit path (auth, validation,
 * idempotency, admission, policy, the Operation + Event + AuditRecord rows). Compared in the same run with the same
 * rows written (and read) as raw prepared SQL through the same driver on a fresh database of the same schema. Then:
 * how long a submission holds the rows it locks (Axon's own submission write, driven from this process), and how soon
 * a worker claims an operation the policy approved (`http.request` to a server in this process, executed). Axon runs
 * in its own process (bench/serve-axon.ts); the raw baseline runs in this one. Prints Markdown for docs/benchmarks.md.
 */

const { values: flags } = parseArgs({
  options: {
    seconds: { type: "string", default: "4" },
    warmup: { type: "string", default: "1" },
    // Each Axon process's first seconds of new submits and replays, before anything is measured on it (JIT, pools).
    "warm-start": { type: "string", default: "6" },
    rounds: { type: "string", default: "2" },
    concurrency: { type: "string", default: "16" },
    // Operations in flight while approved -> executing is measured: fewer than a worker's 8, so none waits for room.
    "execute-concurrency": { type: "string", default: "4" },
    databases: { type: "string", default: "sqlite,postgresql" },
    // Writes a V8 CPU profile of each Axon process to this folder (open it in Chrome DevTools or speedscope).
    profile: { type: "string" },
  },
});
function positive(flag: "seconds" | "warmup" | "warm-start" | "rounds" | "concurrency" | "execute-concurrency"): number {
  const value = Number(flags[flag]);
  if (!(value > 0)) throw new Error(`--${flag} must be a positive number, got ${flags[flag]}`);
  return value;
}
const load = { durationMs: positive("seconds") * 1000, warmupMs: positive("warmup") * 1000, concurrency: positive("concurrency") };
const rounds = positive("rounds");
const executeConcurrency = positive("execute-concurrency");
const warmStartMs = positive("warm-start") * 1000;
const providers = (flags.databases ?? "").split(",").map((name) => {
  if (name !== "sqlite" && name !== "postgresql") throw new Error(`--databases takes sqlite and/or postgresql, got ${name}`);
  return name as Provider;
});

const clientId = "bench";
const admission = {
  requests_per_window: 10_000_000,
  // One window for the whole run (it ends in 2038), so the client's window count is every submission admitted.
  window_seconds: 2_147_483_647,
  client_active: 10_000_000,
  client_pending: 10_000_000,
  global_active: 10_000_000,
  global_executing: 100_000,
};
const policy = {
  rules: [
    { id: "deny-bench", effect: "deny", operations: ["agent.chat"] },
    { id: "allow-upstream", effect: "allow", operations: ["http.request"] },
  ],
};
const submitPath = "/api/agent/v1/operations";
const submitBody = (idempotencyKey: string) =>
  Buffer.from(JSON.stringify({ idempotency_key: idempotencyKey, operation: "agent.chat", target: { network: "hello_world" }, arguments: { text: "hi" }, reason: "bench" }));
/** An operation the policy allows and a worker then runs: a GET to the upstream in this process. */
const executeBody = (idempotencyKey: string) =>
  Buffer.from(JSON.stringify({ idempotency_key: idempotencyKey, operation: "http.request", target: { credential: "bench", path: "/ok" }, arguments: { method: "GET" }, reason: "bench" }));

type LoadName = "Axon new" | "raw insert" | "Axon replay" | "raw select" | "Axon new, 1 of 2 replicas" | "Axon new, 2 replicas";
/** Each Axon load beside its baseline; within a round they alternate A B, then B A in the next. */
const pairs: [LoadName, LoadName][] = [
  ["Axon new", "raw insert"],
  ["Axon replay", "raw select"],
];
/**
 * PostgreSQL, with a second replica on the same database: the load on one of them, and spread over both. Submissions of
 * one client serialize on its load row, whatever replica takes them (that is what keeps its counts exact), so replicas
 * can only add throughput across clients: these loads come from 16 clients in turn.
 */
const replicaClients = 16;
const replicaPair: [LoadName, LoadName] = ["Axon new, 1 of 2 replicas", "Axon new, 2 replicas"];

const databaseNames: Record<Provider, string> = { sqlite: "SQLite", postgresql: "PostgreSQL" };
const loadLabels: Record<LoadName, string> = {
  "Axon new": "Axon submit, new key",
  "raw insert": "raw insert (same rows, 1 transaction)",
  "Axon replay": "Axon submit, replayed key",
  "raw select": "raw select by client + key",
  "Axon new, 1 of 2 replicas": "Axon submit, new key, 16 clients, all to 1 of 2 replicas",
  "Axon new, 2 replicas": "Axon submit, new key, 16 clients, spread over 2 replicas",
};

interface Measured extends LoadResult {
  /** CPU of the processes doing the work: Axon's (both replicas') for Axon loads, this process's (the driver) for raw ones. */
  workerCpuMicros: number;
  /** This process's CPU: the HTTP client for Axon loads, the driver itself for raw ones. */
  benchCpuMicros: number;
  /** CPU of the PostgreSQL backends serving the database under load (a floor; none for SQLite). */
  postgresCpuMicros?: number;
}

interface DatabaseResult {
  provider: Provider;
  runs: Partial<Record<LoadName, Measured[]>>;
  /** Operations the policy approved, each submitted and waited for to `succeeded`, `executeConcurrency` at a time. */
  executed: LoadResult;
  /** Approval to claim of each of them (ms, sorted), from their rows. */
  approvalToClaimMs: number[];
  lock: LockProbe;
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
    const otherClients = Array.from({ length: replicaClients }, (_, index) => ({ name: `${clientId}-${index}`, secret: randomBytes(32).toString("base64url") }));
    const file = (name: string, text: string) => {
      writeFileSync(path.join(dir, name), text, { mode: 0o600 });
      return path.join(dir, name);
    };

    const databases = await Promise.all(
      ["axon", "raw", "lock"].map(async (name) => {
        if (provider === "sqlite") return { name, url: `file:${path.join(dir, `${name}.db`)}` };
        const database = await createPostgresDatabase();
        cleanups.push(() => database.drop());
        return database;
      }),
    );
    const [axonDatabase, rawDatabase, lockDatabase] = databases as [(typeof databases)[number], (typeof databases)[number], (typeof databases)[number]];

    const upstream = await startUpstream();
    cleanups.push(() => upstream.close());
    const upstreamToken = randomBytes(24).toString("hex");
    const axonEnv = JSON.stringify({
      AXON_CLIENTS_FILE: file("clients", [`${clientId} = ${secret}`, ...otherClients.map((other) => `${other.name} = ${other.secret}`)].join("\n") + "\n"),
      AXON_OPERATORS_FILE: file("operators", `${clientId} = ${randomBytes(32).toString("base64url")}\n`),
      AXON_ADMISSION_FILE: file("admission.json", JSON.stringify(admission)),
      AXON_POLICY_FILE: file("policy.json", JSON.stringify(policy)),
      AXON_CREDENTIALS_FILE: file(
        "credentials.json",
        JSON.stringify({ bench: { base_url: upstream.url, header: "Authorization", scheme: "Bearer", secret_env: "BENCH_UPSTREAM_TOKEN", methods: ["GET"] } }),
      ),
      BENCH_UPSTREAM_TOKEN: upstreamToken,
      // Replicas sharing one database share the key that seals payloads (none are used here; it silences the warning).
      AXON_SEALING_KEY: randomBytes(32).toString("base64"),
      DATABASE_URL: axonDatabase.url,
    });
    const startAxon = async () => {
      const axon = await startServerProcess<AxonReady>(new URL("./serve-axon.ts", import.meta.url), {
        env: { BENCH_AXON_ENV: axonEnv },
        nodeArgs: flags.profile ? ["--cpu-prof", `--cpu-prof-dir=${flags.profile}`] : [],
      });
      const http = new KeepAliveHttpClient({ host: "127.0.0.1", port: axon.ready.port }, load.concurrency);
      const stop = async () => {
        http.close();
        await axon.stop();
      };
      return { process: axon, http, stop };
    };
    const axon = await startAxon();
    cleanups.push(() => axon.stop());
    const post = (http: KeepAliveHttpClient, body: Buffer, as = secret) =>
      http.send({ method: "POST", path: submitPath, headers: { authorization: `Bearer ${as}`, "content-type": "application/json" }, body });
    const submit = (idempotencyKey: string, http = axon.http, as = secret) => post(http, submitBody(idempotencyKey), as);

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
    const newSubmit = async (http: KeepAliveHttpClient, as = secret) => {
      const key = `new-${sequence++}`;
      const reply = await submit(key, http, as);
      if (reply.status !== 200) throw new Error(`HTTP ${reply.status}: ${reply.body.toString().slice(0, 300)}`);
      axonKeys.push(key);
    };
    const calls: Partial<Record<LoadName, Call>> = {
      "Axon new": () => newSubmit(axon.http),
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

    /** A new process's first seconds: new submits, then replays of them, measured by nobody. */
    const warmStart = async (http: KeepAliveHttpClient) => {
      const warm = { concurrency: load.concurrency, warmupMs: warmStartMs / 4, durationMs: warmStartMs / 4 };
      await runLoad(() => newSubmit(http), warm);
      await runLoad(async () => void (await submit(axonKeys[replays++ % axonKeys.length]!, http)), warm);
    };
    await warmStart(axon.http);

    const runs: Partial<Record<LoadName, Measured[]>> = {};
    const run = async (name: LoadName, round: number, servers: ServerProcess<unknown>[]) => {
      const database = name.startsWith("Axon") ? axonDatabase : rawDatabase;
      const measured = await measure(calls[name]!, servers, provider === "postgresql" ? database.name : undefined);
      (runs[name] ??= []).push(measured);
      process.stderr.write(`  ${provider} ${name} round ${round + 1}: ${Math.round(measured.requests / measured.seconds)}/s, ${measured.errors} errors\n`);
    };
    for (let round = 0; round < rounds; round++) {
      for (const pair of pairs) {
        for (const name of round % 2 === 0 ? pair : [...pair].reverse()) await run(name, round, name.startsWith("Axon") ? [axon.process] : []);
      }
    }

    if (provider === "postgresql") {
      const second = await startAxon();
      cleanups.push(() => second.stop());
      await warmStart(second.http);
      let spread = 0;
      let turn = 0;
      const nextClient = () => otherClients[turn++ % otherClients.length]!.secret;
      calls["Axon new, 1 of 2 replicas"] = () => newSubmit(axon.http, nextClient());
      calls["Axon new, 2 replicas"] = () => newSubmit(spread++ % 2 === 0 ? axon.http : second.http, nextClient());
      for (let round = 0; round < rounds; round++) {
        for (const name of round % 2 === 0 ? replicaPair : [...replicaPair].reverse()) await run(name, round, [axon.process, second.process]);
      }
      await second.stop();
    }

    // Every submit so far was denied: one operation, event, audit record and window count each.
    const axonRows = await countRows(provider, axonDatabase.url);
    const executed = await executeApproved(provider, (key) => post(axon.http, executeBody(key)), axon.http, secret);
    process.stderr.write(`  ${provider} approved -> executing: ${executed.requests} operations, ${executed.errors} errors\n`);
    const approvalToClaim = await approvalToClaimMs(provider, axonDatabase.url, "http.request");
    await axon.stop();

    const lock = await probeSubmissionLock(provider, lockDatabase.url, load);
    process.stderr.write(`  ${provider} lock probe: one client ${Math.round(lock.oneClient.requests / lock.oneClient.seconds)}/s, many ${Math.round(lock.manyClients.requests / lock.manyClients.seconds)}/s\n`);

    return {
      provider,
      runs,
      executed,
      approvalToClaimMs: approvalToClaim,
      lock,
      newKeys: axonKeys.length,
      replaysPerKey: replays / axonKeys.length,
      axonRows,
      rawRows: await raw.counts(),
      rawInserts: rawKeys.length,
      durability: await raw.durability(),
    };
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup();
  }
}

/**
 * Operations the policy approves at submission, `executeConcurrency` in flight: each submitted (202, approved), then
 * long-polled until it has run (`succeeded`). Fewer in flight than a worker's room, so the time from approval to claim
 * is the worker's reaction, not a queue.
 */
async function executeApproved(provider: Provider, send: (key: string) => Promise<{ status: number; body: Buffer }>, http: KeepAliveHttpClient, secret: string): Promise<LoadResult> {
  let sequence = 0;
  return runLoad(
    async () => {
      const submitted = await send(`execute-${sequence++}`);
      let operation = JSON.parse(submitted.body.toString()) as { id: string; state: string; revision: number };
      if (submitted.status !== 202 || operation.state !== "approved") throw new Error(`HTTP ${submitted.status}: ${submitted.body.toString().slice(0, 300)}`);
      while (operation.state !== "succeeded") {
        if (["failed", "denied", "expired", "canceled"].includes(operation.state)) throw new Error(`${provider}: the operation ended ${operation.state}`);
        const waited = await http.send({
          method: "GET",
          path: `${submitPath}/${operation.id}/events?after_revision=${operation.revision}&wait_seconds=10`,
          headers: { authorization: `Bearer ${secret}` },
        });
        operation = JSON.parse(waited.body.toString()) as typeof operation;
      }
    },
    { concurrency: executeConcurrency, warmupMs: load.warmupMs, durationMs: load.durationMs },
  );
}

/** A server answering every request 200 `{"ok": true}`: the upstream of the executed operations. */
async function startUpstream(): Promise<{ url: string; close: () => void }> {
  const server = http.createServer((_request, response) => response.writeHead(200, { "content-type": "application/json" }).end('{"ok":true}'));
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

async function measure(call: Call, servers: ServerProcess<unknown>[], postgresDatabase: string | undefined): Promise<Measured> {
  const serversCpu = async () => sum(await Promise.all(servers.map((server) => server.cpuMicros())));
  let serverBefore = 0;
  let postgresBefore = new Map<number, number>();
  let benchBefore = process.cpuUsage();
  const result = await runLoad(call, {
    ...load,
    beforeMeasuring: async () => {
      serverBefore = await serversCpu();
      if (postgresDatabase) postgresBefore = await backendCpuMicros(postgresDatabase);
      benchBefore = process.cpuUsage();
    },
  });
  const bench = process.cpuUsage(benchBefore);
  const benchCpuMicros = bench.user + bench.system;
  const serverAfter = await serversCpu();
  return {
    ...result,
    benchCpuMicros,
    workerCpuMicros: servers.length > 0 ? serverAfter - serverBefore : benchCpuMicros,
    ...(postgresDatabase ? { postgresCpuMicros: backendCpuBetween(postgresBefore, await backendCpuMicros(postgresDatabase)) } : {}),
  };
}

function printHeader(): void {
  const args = process.argv.slice(2).join(" ");
  console.log(`Command: \`npm run bench:operations${args ? ` -- ${args}` : ""}\``);
  console.log(`Date: ${new Date().toISOString()}`);
  console.log(`Machine: ${machine()}`);
  // Other work on the machine takes cores from every process here; the load average before and after shows if there was any.
  console.log(`Load average at start (1 min): ${os.loadavg()[0]!.toFixed(2)}`);
  console.log(
    `Load: ${load.concurrency} in flight (${load.concurrency} keep-alive HTTP/1.1 sockets to Axon; a pool of ${load.concurrency} for raw pg), ` +
      `each Axon process warmed ${flags["warm-start"]} s first, then each load ${flags.warmup} s warm-up and ${flags.seconds} s measured, ` +
      `${rounds} rounds alternating Axon and raw (on PostgreSQL then one ` +
      `replica and two, alternating); then ${executeConcurrency} approved operations in flight, executed; then the submission write ` +
      `alone and ${load.concurrency} in flight from this process`,
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
  const measured = (result: DatabaseResult, name: LoadName) => combine(result.runs[name] ?? []);
  console.log(
    "| Database | Load | ops/s (per round) | p50 ms | p90 ms | p99 ms | worker CPU µs/op | worker cores | bench process CPU µs/op | PostgreSQL backends CPU µs/op | errors |",
  );
  console.log("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const result of results) {
    (Object.keys(loadLabels) as LoadName[])
      .filter((name) => result.runs[name])
      .forEach((name, index) => {
        const figures = measured(result, name);
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
    const created = measured(result, "Axon new");
    const inserted = measured(result, "raw insert");
    const replayed = measured(result, "Axon replay");
    const selected = measured(result, "raw select");
    // With writes serialized, 1 / throughput is each submit's share of the writer: what Axon adds to the bare write.
    const extraMicros = 1e6 / created.perSecond - 1e6 / inserted.perSecond;
    console.log(
      `| ${databaseNames[result.provider]} | ${ratio(created.perSecond, inserted.perSecond)} | ${ratio(created.p50, inserted.p50)} | ${ratio(created.p99, inserted.p99)} | ` +
        `${ratio(created.workerMicros, inserted.workerMicros)} | ${(1e6 / created.perSecond).toFixed(0)} − ${(1e6 / inserted.perSecond).toFixed(0)} = +${extraMicros.toFixed(0)} µs | ` +
        `${ratio(replayed.perSecond, selected.perSecond)} | ${ratio(replayed.p50, selected.p50)} | ${ratio(replayed.p99, selected.p99)} | ${ratio(replayed.workerMicros, selected.workerMicros)} |`,
    );
  }

  const replicated = results.filter((result) => result.runs["Axon new, 2 replicas"]);
  if (replicated.length > 0) {
    console.log("");
    console.log("| Database | two replicas ÷ one: new submits per s | p50 | p99 | Axon CPU per submit (both processes) | PostgreSQL backends CPU per submit |");
    console.log("| --- | ---: | ---: | ---: | ---: | ---: |");
    for (const result of replicated) {
      const one = measured(result, "Axon new, 1 of 2 replicas");
      const two = measured(result, "Axon new, 2 replicas");
      const backends = two.postgresMicros !== undefined && one.postgresMicros !== undefined ? ratio(two.postgresMicros, one.postgresMicros) : "–";
      console.log(
        `| ${databaseNames[result.provider]} | ${Math.round(two.perSecond)} ÷ ${Math.round(one.perSecond)} = ${ratio(two.perSecond, one.perSecond)} | ` +
          `${ratio(two.p50, one.p50)} | ${ratio(two.p99, one.p99)} | ${two.workerMicros.toFixed(0)} ÷ ${one.workerMicros.toFixed(0)} µs = ${ratio(two.workerMicros, one.workerMicros)} | ${backends} |`,
      );
    }
  }

  console.log("");
  console.log(
    "| Database | submission write alone: p50 ms | p90 | p99 | one client, 16 in flight: writes/s | 1 ÷ rate ms | many clients, 16 in flight: writes/s | 1 ÷ rate ms |",
  );
  console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const { provider, lock } of results) {
    const rate = (load: LoadResult) => load.requests / load.seconds;
    console.log(
      `| ${databaseNames[provider]} | ${ms(percentile(lock.aloneMs, 0.5))} | ${ms(percentile(lock.aloneMs, 0.9))} | ${ms(percentile(lock.aloneMs, 0.99))} | ` +
        `${Math.round(rate(lock.oneClient)).toLocaleString("en-US")} | ${ms(1000 / rate(lock.oneClient))} | ` +
        `${Math.round(rate(lock.manyClients)).toLocaleString("en-US")} | ${ms(1000 / rate(lock.manyClients))} |`,
    );
  }

  console.log("");
  console.log(`| Database | approved operations run (${executeConcurrency} in flight) | approved → executing p50 ms | p90 | p99 | max | submit → succeeded p50 ms | p99 | errors |`);
  console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const { provider, executed, approvalToClaimMs: delays } of results) {
    console.log(
      `| ${databaseNames[provider]} | ${delays.length} | ${ms(percentile(delays, 0.5))} | ${ms(percentile(delays, 0.9))} | ${ms(percentile(delays, 0.99))} | ${ms(delays.at(-1) ?? Number.NaN)} | ` +
        `${ms(percentile(executed.latenciesMs, 0.5))} | ${ms(percentile(executed.latenciesMs, 0.99))} | ${executed.errors} |`,
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
