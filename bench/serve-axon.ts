import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import { serveParent } from "./server-process.js";

/**
 * Axon as `npm start` runs it, from the build (dist/), on 127.0.0.1 and a free port: the repository's manifest and no
 * LLM, unless BENCH_AXON_ENV (a JSON object of environment variables, e.g. AGENT_MANIFEST_FILE and OPENAI_BASE_URL) says
 * otherwise. It logs at info, as `npm start` does, to /dev/null (stdout talks to the parent).
 */
const projectRoot = path.resolve(import.meta.dirname, "..");
const built = (module: string) => import(pathToFileURL(path.join(projectRoot, "dist", module)).href);
const { startAxon } = (await built("axon.js")) as typeof import("../src/axon.js");
const { loadConfig } = (await built("config.js")) as typeof import("../src/config.js");
const { createLogger, batchedLines } = (await built("logger.js")) as typeof import("../src/logger.js");
const { startTracing } = (await built("telemetry/start.js")) as typeof import("../src/telemetry/start.js");
// As serve.ts does: traces leave only when the OTEL_* variables of this process name an endpoint.
const stopTracing = await startTracing(process.env);
const dataDir = mkdtempSync(path.join(os.tmpdir(), "axon-bench-"));
const env: Record<string, string> = {
  AXON_DATA_DIR: dataDir,
  AGENT_HTTP_PORT: "0",
  AXON_SHUTDOWN_GRACE_SECONDS: "1",
  ...(JSON.parse(process.env.BENCH_AXON_ENV ?? "{}") as Record<string, string>),
};
const config = { ...loadConfig(env, projectRoot), host: "127.0.0.1" };
// The writer `npm start` gives stdout, on a file that takes any amount.
const axon = await startAxon(config, createLogger(config.logLevel, batchedLines("/dev/null")), { env });

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
    await stopTracing();
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
