import path from "node:path";
import { AgentRegistry } from "../../src/agents/registry.js";
import type { ChatRunner } from "../../src/agents/chat-runner.js";
import { loadConfig, type Config } from "../../src/config.js";
import { createLogger } from "../../src/logger.js";
import { HealthState } from "../../src/server/health.js";
import { startServer, type AxonServer } from "../../src/server/server.js";
import { ScriptedChats } from "./scripted-chat.js";

export const projectRoot = path.resolve(import.meta.dirname, "../..");

export interface TestServer {
  server: AxonServer;
  url: string;
  port: number;
  chats: ChatRunner;
  health: HealthState;
  registry: AgentRegistry;
  close(): Promise<void>;
}

/** A real Axon server on 127.0.0.1, port 0, serving the example networks with the scripted chat source. */
export async function startTestServer(
  options: { env?: Record<string, string>; chats?: ChatRunner; config?: Partial<Config> } = {},
): Promise<TestServer> {
  const config = {
    ...loadConfig({ AGENT_HTTP_PORT: "0", LOG_LEVEL: "silent", ...options.env }, projectRoot),
    host: "127.0.0.1",
    ...options.config,
  };
  const logger = createLogger(config.logLevel);
  const registry = await AgentRegistry.load({ manifestFile: config.manifestFile, projectRoot, logger });
  const health = new HealthState();
  const chats = options.chats ?? new ScriptedChats();
  const server = await startServer({ config, logger, registry, chats, health });
  health.markReady();
  const port = server.ports[0]!;
  return {
    server,
    url: `http://127.0.0.1:${port}`,
    port,
    chats,
    health,
    registry,
    close: async () => {
      registry.close();
      await server.close();
    },
  };
}
