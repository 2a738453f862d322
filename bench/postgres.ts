import { readdir, readFile } from "node:fs/promises";
import pg from "pg";
import { adminUrl, createPostgresDatabase as createTestDatabase } from "../test/support/postgres-database.js";

/** A fresh database for one bench run, named axon_bench_<random>; `drop` removes it even if connections remain. */
export const createPostgresDatabase = () => createTestDatabase("axon_bench");

const ticksPerSecond = 100; // USER_HZ on Linux

/**
 * CPU time so far of each PostgreSQL backend serving `database` (its command line names the database), by pid, in
 * microseconds. The work a submit costs the server happens in these processes; WAL writer and checkpointer are
 * shared with every other database and left out. Linux only (/proc); elsewhere, empty.
 */
export async function backendCpuMicros(database: string): Promise<Map<number, number>> {
  const cpu = new Map<number, number>();
  let pids: string[];
  try {
    pids = (await readdir("/proc")).filter((entry) => /^\d+$/.test(entry));
  } catch {
    return cpu;
  }
  await Promise.all(
    pids.map(async (pid) => {
      try {
        const command = (await readFile(`/proc/${pid}/cmdline`, "utf8")).replaceAll("\0", " ");
        if (!command.startsWith("postgres:") || !command.split(/\s+/).includes(database)) return;
        // Fields after the parenthesised command name: state is field 3, utime 14 and stime 15.
        const stat = await readFile(`/proc/${pid}/stat`, "utf8");
        const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        cpu.set(Number(pid), ((Number(fields[11]) + Number(fields[12])) / ticksPerSecond) * 1e6);
      } catch {
        // The process ended between listing and reading: its time is lost either way.
      }
    }),
  );
  return cpu;
}

/** CPU the backends used between two samples; a backend that ended in between is missing, so this is a floor. */
export function backendCpuBetween(before: Map<number, number>, after: Map<number, number>): number {
  let micros = 0;
  for (const [pid, total] of after) micros += total - (before.get(pid) ?? 0);
  return micros;
}

/**
 * Samples, every `everyMs` until stopped, how many backends of `database` are waiting on an advisory lock (for
 * Axon, the one lock every submit's transaction takes first, across replicas): the peak and the mean of the samples.
 */
export function watchAdvisoryLockWaiters(database: string, everyMs = 200): { stop(): Promise<{ peak: number; mean: number }> } {
  const client = new pg.Client({ connectionString: adminUrl });
  const counts: number[] = [];
  let stopped = false;
  const sampling = (async () => {
    await client.connect();
    try {
      while (!stopped) {
        const { rows } = await client.query<{ waiting: string }>(
          `SELECT count(*) AS waiting FROM pg_stat_activity WHERE datname = $1 AND wait_event_type = 'Lock' AND wait_event = 'advisory'`,
          [database],
        );
        counts.push(Number(rows[0]!.waiting));
        await new Promise((resolve) => setTimeout(resolve, everyMs));
      }
    } finally {
      await client.end();
    }
  })();
  return {
    async stop() {
      stopped = true;
      await sampling;
      return { peak: Math.max(0, ...counts), mean: counts.reduce((total, count) => total + count, 0) / Math.max(1, counts.length) };
    },
  };
}
