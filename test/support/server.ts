import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { ChatRunner } from "../../src/agents/chat-runner.js";
import type { AgentRegistry } from "../../src/agents/registry.js";
import { startAxon, type Axon } from "../../src/axon.js";
import { loadConfig, type Config } from "../../src/config.js";
import { createLogger } from "../../src/logger.js";
import type { HealthState } from "../../src/server/health.js";
import type { Clock } from "../../src/operations/clock.js";
import type { Operations } from "../../src/operations/operations.js";
import type { AxonServer } from "../../src/server/server.js";

export const projectRoot = path.resolve(import.meta.dirname, "../..");

export interface TestServer {
  server: AxonServer;
  url: string;
  port: number;
  health: HealthState;
  registry: AgentRegistry;
  operations: Operations;
  temporaryNetworks: Axon["temporaryNetworks"];
  periodicRuns: Axon["periodicRuns"];
  /** Where this server keeps its database and its clients and operators files. */
  dataDir: string;
  close(): Promise<void>;
}

/**
 * A real Axon server on 127.0.0.1, port 0, assembled as `npm start` does. `env` is its whole environment
 * (LLM keys included); `chats` replaces the agent runtime with a test-only message source.
 */
export async function startTestServer(
  options: { env?: Record<string, string>; chats?: ChatRunner; config?: Partial<Config>; logLines?: string[]; clock?: Clock } = {},
): Promise<TestServer> {
  // Each server keeps its database and secrets in a fresh data directory of its own.
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "axon-test-"));
  const env = { AGENT_HTTP_PORT: "0", LOG_LEVEL: "silent", AXON_DATA_DIR: dataDir, ...options.env };
  const config = { ...loadConfig(env, projectRoot), host: "127.0.0.1", ...options.config };
  // With `logLines`, every log line is kept there (at debug level), for tests that search the logs.
  const logLines = options.logLines;
  const logger = logLines ? createLogger("debug", { write: (line: string) => void logLines.push(line) }) : createLogger(config.logLevel);
  const axon = await startAxon(config, logger, { env, ...(options.chats ? { chats: options.chats } : {}), ...(options.clock ? { clock: options.clock } : {}) });
  const port = axon.server.ports[0]!;
  return { ...axon, url: `http://127.0.0.1:${port}`, port, dataDir };
}
