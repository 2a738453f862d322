import { performance } from "node:perf_hooks";

/** One request; resolves when the whole response has arrived, rejects if it was not a success. */
export type Call = () => Promise<void>;

export interface LoadOptions {
  concurrency: number;
  warmupMs: number;
  durationMs: number;
  /** Runs between the warm-up and the measured run, e.g. to sample a server's CPU time so the warm-up's is left out. */
  beforeMeasuring?: () => Promise<void>;
}

export interface LoadResult {
  requests: number;
  errors: number;
  seconds: number;
  /** Every successful request's latency, sorted ascending. */
  latenciesMs: number[];
  /** Client process CPU over the measured window, in cores (1 = one core busy). */
  clientCores: number;
}

/**
 * A closed loop: `concurrency` callers each send the next request as soon as the last one is answered, for a
 * fixed time. The warm-up runs the same loop first and is thrown away (JIT, connection setup, socket buffers).
 */
export async function runLoad(call: Call, options: LoadOptions): Promise<LoadResult> {
  await loop(call, options.concurrency, deadline(options.warmupMs));
  await options.beforeMeasuring?.();
  const cpuBefore = process.cpuUsage();
  const result = await loop(call, options.concurrency, deadline(options.durationMs));
  const cpu = process.cpuUsage(cpuBefore);
  return { ...result, clientCores: (cpu.user + cpu.system) / 1000 / (result.seconds * 1000) };
}

/**
 * The same closed loop, run until `stop` aborts instead of for a fixed time: for a load that must last exactly as
 * long as another one running beside it. Requests in flight when it aborts are awaited and counted.
 */
export function runUntil(call: Call, concurrency: number, stop: AbortSignal): Promise<Omit<LoadResult, "clientCores">> {
  return loop(call, concurrency, () => !stop.aborted);
}

function deadline(durationMs: number): () => boolean {
  const end = performance.now() + durationMs;
  return () => performance.now() < end;
}

async function loop(call: Call, concurrency: number, keepGoing: () => boolean): Promise<Omit<LoadResult, "clientCores">> {
  const latenciesMs: number[] = [];
  let errors = 0;
  let firstError: unknown;
  const started = performance.now();
  const caller = async (): Promise<void> => {
    while (keepGoing()) {
      const sent = performance.now();
      try {
        await call();
        latenciesMs.push(performance.now() - sent);
      } catch (error) {
        errors++;
        firstError ??= error;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, caller));
  const seconds = (performance.now() - started) / 1000;
  // A run where nothing succeeded measures nothing; say why rather than print a table of zeros.
  if (latenciesMs.length === 0) throw new Error(`every request failed: ${String(firstError)}`);
  return { requests: latenciesMs.length, errors, seconds, latenciesMs: latenciesMs.sort((a, b) => a - b) };
}

export function percentile(sortedMs: number[], fraction: number): number {
  return sortedMs[Math.min(sortedMs.length - 1, Math.floor(fraction * sortedMs.length))] ?? Number.NaN;
}
