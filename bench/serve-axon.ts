import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { startAxon } from "../src/axon.js";
import { loadConfig } from "../src/config.js";
import { createLogger } from "../src/logger.js";
import { serveParent } from "./server-process.js";

/**
 * Axon as `npm start` runs it, on 127.0.0.1 and a free port: the repository's manifest and no LLM, unless
 * BENCH_AXON_ENV (a JSON object of environment variables, e.g. AGENT_MANIFEST_FILE and OPENAI_BASE_URL) says otherwise.
 */
const projectRoot = path.resolve(import.meta.dirname, "..");
const dataDir = mkdtempSync(path.join(os.tmpdir(), "axon-bench-"));
const env: Record<string, string> = {
  AXON_DATA_DIR: dataDir,
  AGENT_HTTP_PORT: "0",
  LOG_LEVEL: "silent",
  AXON_SHUTDOWN_GRACE_SECONDS: "1",
  ...(JSON.parse(process.env.BENCH_AXON_ENV ?? "{}") as Record<string, string>),
};
const config = { ...loadConfig(env, projectRoot), host: "127.0.0.1" };
const axon = await startAxon(config, createLogger("silent"), { env });

export interface AxonReady {
  port: number;
}

/** Sent with every sample when BENCH_EVENT_LOOP_DELAY=1: how late the event loop ran timers since the previous sample. */
export interface EventLoopDelay {
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

// Opt-in, so the other benches measure Axon exactly as before; a 10 ms timer costs next to nothing.
const delay = process.env.BENCH_EVENT_LOOP_DELAY === "1" ? monitorEventLoopDelay({ resolution: 10 }) : undefined;
delay?.enable();

serveParent(
  { port: axon.server.ports[0]! } satisfies AxonReady,
  async () => {
    await axon.close();
    rmSync(dataDir, { recursive: true, force: true });
  },
  delay &&
    ((): EventLoopDelay => {
      // The histogram is in nanoseconds and includes the 10 ms resolution itself, which is taken off.
      const late = (nanoseconds: number) => Math.max(0, nanoseconds / 1e6 - 10);
      const figures = { p50Ms: late(delay.percentile(50)), p99Ms: late(delay.percentile(99)), maxMs: late(delay.max) };
      delay.reset();
      return figures;
    }),
);
