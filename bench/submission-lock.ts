import pg from "pg";
import { windowStartOf } from "../src/operations/admission.js";
import { newId } from "../src/operations/lifecycle.js";
import { operationsStore } from "../src/operations/store.js";
import { approvedOperation } from "../src/operations/submission.js";
import { submissionStatement, writeSubmission, type PlannedSubmission } from "../src/operations/submission-store.js";
import { openDatabase, type Provider } from "../src/store/database.js";
import { runLoad, type LoadResult } from "./load.js";

/*
 * How long a submission holds the load rows it locks, measured on Axon's own submission write with an operation the
 * policy allowed (it will be active, so it locks the client's row and the server's), on a fresh database. Alone, one
 * at a time, a write's duration bounds how long it holds them; under contention, the rate of writes that all wait for
 * the same row is that row's ceiling, and 1 ÷ rate what each write held it for, hand-over included.
 *
 * On PostgreSQL the write is one statement (`submissionStatement`), sent here through a bare pg pool so that this
 * process's own CPU (Prisma's, on a busy machine) does not set the pace: what is left is the database's. Each text is
 * a prepared statement, by name, as Axon's are. On SQLite the
 * lock is the file's one writer, held for the whole transaction (`writeSubmission`), Prisma's calls included.
 */

export interface LockProbe {
  /** Durations of writes made one at a time, sorted (ms). */
  aloneMs: number[];
  /** `concurrency` writes in flight, all for one client: its row and the server's serialize them. */
  oneClient: LoadResult;
  /** The same, each write for another client: only the server's row serializes them. */
  manyClients: LoadResult;
}

export async function probeSubmissionLock(
  provider: Provider,
  databaseUrl: string,
  load: { concurrency: number; warmupMs: number; durationMs: number },
): Promise<LockProbe> {
  const database = await openDatabase(databaseUrl);
  const pool = provider === "postgresql" ? new pg.Pool({ connectionString: databaseUrl, max: load.concurrency }) : undefined;
  try {
    const store = operationsStore(database);
    const names: Record<string, string> = {};
    const write = async (clientId: string) => {
      if (pool) {
        // A client's first statement only creates its load row; the write is then made again, as a submission would.
        for (let attempt = 0; attempt < 2; attempt++) {
          const statement = submissionStatement(plan(clientId));
          // As Prisma's adapter sends dates: UTC text (PostgreSQL ignores the zone of a timestamp without one).
          const values = statement.values.map((value) => (value instanceof Date ? value.toISOString() : value));
          const name = (names[statement.text] ??= `submission_${Object.keys(names).length}`);
          const { rows } = await pool.query<{ created: number; clientActive: number | null }>({ name, text: statement.text, values });
          if (rows[0]?.created === 1) return;
          if (rows[0]?.clientActive !== null) throw new Error(`the write was not created: ${JSON.stringify(rows)}`);
        }
        throw new Error(`the write for ${clientId} was not created`);
      }
      const outcome = await writeSubmission(store, plan(clientId));
      if (outcome.kind !== "created") throw new Error(`the write was not created: ${JSON.stringify(outcome)}`);
    };
    for (let i = 0; i < 50; i++) await write("alone");
    const aloneMs: number[] = [];
    for (let i = 0; i < 300; i++) {
      const started = performance.now();
      await write("alone");
      aloneMs.push(performance.now() - started);
    }
    let client = 0;
    // Every client's load row exists before anything is measured.
    for (let i = 0; i < 256; i++) await write(`many-${i}`);
    await write("one");
    return {
      aloneMs: aloneMs.sort((a, b) => a - b),
      oneClient: await runLoad(() => write("one"), load),
      manyClients: await runLoad(() => write(`many-${client++ % 256}`), load),
    };
  } finally {
    await pool?.end();
    await database.close();
  }
}

const unreachable = 10_000_000;

function plan(clientId: string): PlannedSubmission {
  const now = new Date();
  const windowSeconds = 2_147_483_647;
  return {
    operation: approvedOperation({
      clientId,
      idempotencyKey: newId("key"),
      requestHash: "0".repeat(64),
      operation: "http.request",
      target: { credential: "bench", path: "/ok" },
      arguments: { method: "GET" },
      reason: "bench",
      presentationTitle: "GET /ok",
      presentationSummary: "bench",
      now,
    }),
    kind: "operation.approved",
    category: null,
    detail: { rule: "allow-bench" },
    limits: {
      windowStart: windowStartOf(now, windowSeconds),
      windowSeconds,
      requestsPerWindow: unreachable,
      clientActive: unreachable,
      clientPending: unreachable,
      globalActive: unreachable,
      globalExecuting: unreachable,
    },
  };
}
