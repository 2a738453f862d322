import path from "node:path";
import { AgentRegistry } from "../src/agents/registry.js";
import { unconfiguredChatRunner } from "../src/agents/chat-runner.js";
import { loadConfig } from "../src/config.js";
import { createLogger } from "../src/logger.js";
import { HealthState } from "../src/server/health.js";
import { startServer } from "../src/server/server.js";
import { serveParent } from "./server-process.js";

/** Axon as `npm start` runs it (the repository's manifest, no LLM), on 127.0.0.1 and a free port. */
const projectRoot = path.resolve(import.meta.dirname, "..");
const config = {
  ...loadConfig({ AGENT_HTTP_PORT: "0", LOG_LEVEL: "silent", AXON_SHUTDOWN_GRACE_SECONDS: "1" }, projectRoot),
  host: "127.0.0.1",
};
const logger = createLogger("silent");
const registry = await AgentRegistry.load({ manifestFile: config.manifestFile, projectRoot, logger });
const health = new HealthState();
const server = await startServer({ config, logger, registry, chats: unconfiguredChatRunner, health });
health.markReady();

export interface AxonReady {
  port: number;
}

serveParent({ port: server.ports[0]! } satisfies AxonReady, async () => {
  await server.close();
  registry.close();
});
