import { AgentRegistry } from "./agents/registry.js";
import { unconfiguredChatRunner } from "./agents/chat-runner.js";
import { loadConfig } from "./config.js";
import { createLogger } from "./logger.js";
import { HealthState } from "./server/health.js";
import { startServer } from "./server/server.js";

const config = loadConfig();
const logger = createLogger(config.logLevel);

const registry = await AgentRegistry.load({ manifestFile: config.manifestFile, projectRoot: config.projectRoot, logger });
if (config.manifestUpdatePeriodSeconds > 0) registry.watch(config.manifestUpdatePeriodSeconds);
const health = new HealthState();
const server = await startServer({ config, logger, registry, chats: unconfiguredChatRunner, health });
health.markReady();

const [httpPort, grpcPort] = server.ports;
logger.info(
  {
    url: `http://localhost:${httpPort}`,
    neuro_san_grpc_port: grpcPort,
    manifest: config.manifestFile,
    networks: registry.listPublic().map((agent) => agent.agentName),
    llm: "none configured: chat is refused until OPENAI_API_KEY, ANTHROPIC_API_KEY or OLLAMA_HOST is set",
  },
  `Axon is serving gRPC, gRPC-Web, Connect and REST on http://localhost:${httpPort}`,
);

let stopping = false;
for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal, grace_seconds: config.shutdownGraceSeconds }, "draining");
    registry.close();
    server.close().then(
      () => exit(0, "stopped"),
      (error: unknown) => exit(1, "shutdown failed", error),
    );
  });
}

/**
 * Ends by letting the event loop empty, so the asynchronous log writes still go out; a forced exit follows
 * only if some handle would keep the process alive.
 */
function exit(code: number, message: string, error?: unknown): void {
  if (error) logger.error({ err: error }, message);
  else logger.info(message);
  process.exitCode = code;
  setTimeout(() => process.exit(code), 2000).unref();
}
