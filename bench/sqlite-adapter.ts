import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { PrismaBetterSqlite3 } from "@prisma/adapter-better-sqlite3";
import Sqlite from "better-sqlite3";
import { PrismaClient as SqlitePrismaClient } from "../src/gen/prisma/sqlite/client.js";
import { openDatabase, type PrismaClient } from "../src/store/database.js";
import { PrismaSqliteThread } from "../src/store/sqlite/adapter.js";
import { percentile, runLoad, type Call, type LoadResult } from "./load.js";
import { machine } from "./machine.js";

/*
 * `npx tsx bench/sqlite-adapter.ts`: what one statement costs through Axon's SQLite adapter (better-sqlite3 in a
 * worker thread, src/store/sqlite/) against Prisma's own better-sqlite3 adapter (on the event loop) and raw
 * better-sqlite3 prepared statements, in the same process and run, interleaved, on three fresh files with the same
 * settings as Axon's (WAL, synchronous FULL, foreign keys). CPU is the process's, every thread counted; "loop CPU"
 * is the main thread's alone; "loop busy" is the time the event loop was not free for anything else (its CPU, plus
 * any time it spent blocked on a file's lock, an fsync or a reply from the thread). Prints Markdown.
 */

const { values: flags } = parseArgs({
  options: {
    seconds: { type: "string", default: "3" },
    warmup: { type: "string", default: "1" },
    rounds: { type: "string", default: "2" },
    concurrency: { type: "string", default: "1,8" },
    workloads: { type: "string", default: "read,insert,transaction" },
  },
});
const seconds = Number(flags.seconds);
const warmup = Number(flags.warmup);
const rounds = Number(flags.rounds);
const concurrencies = (flags.concurrency ?? "").split(",").map(Number);
if (![seconds, warmup, rounds, ...concurrencies].every((value) => value > 0)) throw new Error("--seconds, --warmup, --rounds and --concurrency take positive numbers");

type Variant = "raw better-sqlite3" | "Prisma + @prisma/adapter-better-sqlite3" | "Prisma + Axon's thread adapter";
type Workload = "read one row" | "insert one row" | "transaction of 4 inserts";
/** Statements each workload sends to SQLite: an interactive transaction adds BEGIN and COMMIT. */
const statementsPer: Record<Workload, number> = { "read one row": 1, "insert one row": 1, "transaction of 4 inserts": 6 };
const workloadFlags: Record<string, Workload> = { read: "read one row", insert: "insert one row", transaction: "transaction of 4 inserts" };
const workloads = (flags.workloads ?? "").split(",").map((name) => {
  const workload = workloadFlags[name];
  if (!workload) throw new Error(`--workloads takes ${Object.keys(workloadFlags).join(", ")}; got ${name}`);
  return workload;
});

interface Target {
  variant: Variant;
  calls: Record<Workload, Call>;
  close(): Promise<void>;
}

const pragmas = "PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON;";
const scratch = mkdtempSync(path.join(os.tmpdir(), "axon-bench-sqlite-"));
let sequence = 0;
const auditSql = `INSERT INTO "AuditRecord" ("at", "actor", "actorKind", "action", "category", "operationId", "detail") VALUES (?, ?, ?, ?, ?, ?, ?)`;
const readSql = `SELECT * FROM "Operation" WHERE "id" = ?`;
const auditValues = () => [new Date().toISOString().replace("Z", "+00:00"), "bench", "client", "operation.submitted", null, `op-${sequence++}`, `{"via":"bench"}`];

/** A fresh file with Axon's schema and one operation to read back. */
async function migrated(name: string): Promise<string> {
  const file = path.join(scratch, `${name}.db`);
  const database = await openDatabase(`file:${file}`);
  await database.prisma.operation.create({
    data: {
      id: "op-read",
      clientId: "bench",
      idempotencyKey: "read",
      requestHash: "ab".repeat(32),
      operation: "agent.chat",
      target: { network: "hello_world" },
      arguments: { text: "hi" },
      reason: "bench",
      state: "pending",
      revision: 1,
      presentationTitle: "t",
      presentationSummary: "s",
    },
  });
  await database.close();
  return file;
}

async function raw(): Promise<Target> {
  const database = new Sqlite(await migrated("raw"), { timeout: 5_000 });
  database.exec(pragmas);
  const read = database.prepare(readSql);
  const insert = database.prepare(auditSql);
  const fourInserts = database.transaction(() => {
    for (let index = 0; index < 4; index++) insert.run(auditValues());
  });
  return {
    variant: "raw better-sqlite3",
    calls: {
      "read one row": async () => void read.get("op-read"),
      "insert one row": async () => void insert.run(auditValues()),
      "transaction of 4 inserts": async () => fourInserts.immediate(),
    },
    close: async () => void database.close(),
  };
}

function throughPrisma(variant: Variant, prisma: PrismaClient): Target {
  const insert = (client: Pick<PrismaClient, "$executeRawUnsafe">) => client.$executeRawUnsafe(auditSql, ...auditValues());
  return {
    variant,
    calls: {
      "read one row": async () => void (await prisma.operation.findUnique({ where: { id: "op-read" } })),
      "insert one row": async () => void (await insert(prisma)),
      "transaction of 4 inserts": async () =>
        prisma.$transaction(async (tx) => {
          for (let index = 0; index < 4; index++) await insert(tx);
        }),
    },
    close: () => prisma.$disconnect(),
  };
}

async function stock(): Promise<Target> {
  const prisma = new SqlitePrismaClient({ adapter: new PrismaBetterSqlite3({ url: await migrated("stock"), timeout: 5_000 }) });
  await prisma.$executeRawUnsafe("PRAGMA journal_mode = WAL");
  await prisma.$executeRawUnsafe("PRAGMA foreign_keys = ON");
  return throughPrisma("Prisma + @prisma/adapter-better-sqlite3", prisma);
}

async function thread(): Promise<Target> {
  const adapter = new PrismaSqliteThread({ file: await migrated("thread"), busyTimeoutMs: 5_000, pragmas });
  const prisma = new SqlitePrismaClient({ adapter });
  await prisma.$connect();
  return throughPrisma("Prisma + Axon's thread adapter", prisma);
}

/** The main thread's time on a CPU, in microseconds (Linux schedstat, nanosecond resolution). */
function loopCpuMicros(): number {
  return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, "utf8").split(" ")[0]) / 1000;
}

interface Measurement extends LoadResult {
  cpuMicros: number;
  loopCpuMicros: number;
  loopBusyMicros: number;
}

const results = new Map<string, Measurement[]>();
const key = (workload: Workload, concurrency: number, variant: Variant) => `${workload}|${concurrency}|${variant}`;
const loadAtStart = os.loadavg();
const startedAt = new Date();
const targets = [await raw(), await stock(), await thread()];
try {
  for (let round = 0; round < rounds; round++) {
    for (const workload of workloads) {
      for (const concurrency of concurrencies) {
        // Alternating order, so a drift in the machine's load falls on every variant.
        for (const target of round % 2 === 0 ? targets : [...targets].reverse()) {
          let cpuBefore = process.cpuUsage();
          let loopBefore = 0;
          let busyBefore = performance.eventLoopUtilization();
          const result = await runLoad(target.calls[workload], {
            concurrency,
            warmupMs: warmup * 1000,
            durationMs: seconds * 1000,
            beforeMeasuring: async () => {
              cpuBefore = process.cpuUsage();
              loopBefore = loopCpuMicros();
              busyBefore = performance.eventLoopUtilization();
            },
          });
          const cpu = process.cpuUsage(cpuBefore);
          const busy = performance.eventLoopUtilization(busyBefore).active * 1000;
          const measurement = { ...result, cpuMicros: cpu.user + cpu.system, loopCpuMicros: loopCpuMicros() - loopBefore, loopBusyMicros: busy };
          const list = results.get(key(workload, concurrency, target.variant)) ?? [];
          list.push(measurement);
          results.set(key(workload, concurrency, target.variant), list);
          process.stderr.write(`  ${workload}, ${concurrency} in flight, ${target.variant}: ${Math.round(result.requests / result.seconds)}/s\n`);
        }
      }
    }
  }
} finally {
  for (const target of targets) await target.close();
  rmSync(scratch, { recursive: true, force: true });
}

const loads = (values: number[]) => values.map((value) => value.toFixed(2)).join(", ");
console.log(`Command: \`npx tsx bench/sqlite-adapter.ts${process.argv.length > 2 ? ` ${process.argv.slice(2).join(" ")}` : ""}\``);
console.log(`Date: ${startedAt.toISOString()} to ${new Date().toISOString()}`);
console.log(`Machine: ${machine()}; load average (1, 5, 15 min) ${loads(loadAtStart)} at the start, ${loads(os.loadavg())} at the end`);
console.log(`Each figure: ${rounds} rounds of ${seconds} s after a ${warmup} s warm-up, pooled.`);
console.log("");
console.log(
  "| Workload | in flight | Variant | per s | p50 ms | p99 ms | µs per statement: CPU, all threads | loop CPU | loop busy | ÷ raw: CPU | ÷ Prisma's adapter: CPU | loop CPU | loop busy |",
);
console.log("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
for (const workload of workloads) {
  for (const concurrency of concurrencies) {
    const pooled = (variant: Variant) => {
      const runs = results.get(key(workload, concurrency, variant))!;
      const requests = runs.reduce((sum, run) => sum + run.requests, 0);
      const statements = requests * statementsPer[workload];
      return {
        rate: requests / runs.reduce((sum, run) => sum + run.seconds, 0),
        latencies: runs.flatMap((run) => run.latenciesMs).sort((a, b) => a - b),
        cpu: runs.reduce((sum, run) => sum + run.cpuMicros, 0) / statements,
        loop: runs.reduce((sum, run) => sum + run.loopCpuMicros, 0) / statements,
        busy: runs.reduce((sum, run) => sum + run.loopBusyMicros, 0) / statements,
      };
    };
    const [bare, prismas] = [pooled("raw better-sqlite3"), pooled("Prisma + @prisma/adapter-better-sqlite3")];
    for (const target of targets) {
      const figures = pooled(target.variant);
      console.log(
        `| ${workload} | ${concurrency} | ${target.variant} | ${Math.round(figures.rate).toLocaleString("en-US")} | ${percentile(figures.latencies, 0.5).toFixed(2)} | ` +
          `${percentile(figures.latencies, 0.99).toFixed(2)} | ${figures.cpu.toFixed(0)} | ${figures.loop.toFixed(0)} | ${figures.busy.toFixed(0)} | ` +
          `${(figures.cpu / bare.cpu).toFixed(2)}× | ${(figures.cpu / prismas.cpu).toFixed(2)}× | ${(figures.loop / prismas.loop).toFixed(2)}× | ${(figures.busy / prismas.busy).toFixed(2)}× |`,
      );
    }
  }
}
