import type { ChatRunner } from "./agents/chat-runner.js";
import { ChatThread } from "./agents/chat-thread/chat-thread.js";
import { AgentRegistry } from "./agents/registry.js";
import { JwtVerifier } from "./auth/jwt.js";
import type { Config } from "./config.js";
import type { Logger } from "./logger.js";
import { startOperations, type Operations } from "./operations/operations.js";
import { contractDigest } from "./server/descriptors.js";
import { HealthState } from "./server/health.js";
import { startServer, type AxonServer } from "./server/server.js";
import { toolCallHolds } from "./operations/providers/agent-tool-call.js";

export interface Axon {
  server: AxonServer;
  registry: AgentRegistry;
  health: HealthState;
  operations: Operations;
  /** Drains the server, then stops the registry's reloads. */
  close(): Promise<void>;
}

/** The composition root: registry, agent runtime and server, assembled the one way `npm start` runs them. */
export async function startAxon(
  config: Config,
  logger: Logger,
  options: {
    env?: NodeJS.ProcessEnv;
    chats?: ChatRunner;
    /** Told when a database awaited after start cannot be opened after all (a wrong database name, say): stop then. */
    onUnopenable?: (error: unknown) => void;
  } = {},
): Promise<Axon> {
  const env = options.env ?? process.env;
  const { manifestFile, projectRoot, toolPath, toolboxInfoFile, mcpInfoFile, llmInfoFile } = config;
  const registry = new AgentRegistry({
    ...{ manifestFile, projectRoot, toolPath, toolboxInfoFile, mcpInfoFile, llmInfoFile },
    ...{ environment: env, logger, python: config.python },
  });
  // Chats (StreamingChat and agent.chat operations) run on a thread of their own, off the loop that serves requests.
  const chatThread = options.chats ? undefined : new ChatThread({ config, env, logger });
  const chats = options.chats ?? chatThread!;
  // The networks are read while the database opens: the one is mostly the HOCON parser's work, the other mostly
  // waiting for the disk and the SQLite thread. Nothing reads the registry before both are done.
  const loading = registry.reload({ throwOnBrokenManifest: true });
  const operations = await startOperations(config, logger, { registry, chats, env }).catch(async (error: unknown) => {
    await loading.catch(() => undefined);
    throw error;
  });
  await loading.catch(async (error: unknown) => {
    await operations.close();
    throw error;
  });
  if (config.manifestUpdatePeriodSeconds > 0) registry.watch(config.manifestUpdatePeriodSeconds);
  // Tool calls an agent's HumanInTheLoopMiddleware interrupts wait, in the chat thread, for an operator's decision here.
  chatThread?.holdToolCallsWith(toolCallHolds(() => operations.broker.native));
  if (operations.access.isOpen) logger.info("no AXON_NETWORK_ACCESS_FILE: every agent network is open to every caller");
  else logger.info({ file: operations.access.source }, "agent networks are granted per principal");
  const tokens = config.jwt && (await JwtVerifier.create(config.jwt, { logger }));
  const health = new HealthState();
  const server = await startServer({
    config,
    logger,
    tokens,
    registry,
    chats,
    health,
    operations: {
      broker: operations.broker,
      principals: operations.principals,
      access: operations.access,
      transfers: operations.transfers,
      descriptor: {
        contractDigest,
        buildId: env.AXON_BUILD_ID ?? `axon-${process.env.npm_package_version ?? "dev"}`,
        operationsFor: operations.operationsFor,
      },
    },
  });
  let closing = false;
  const serve = (): void => {
    health.markReady();
    // Submissions are stored from now on; the worker executes what is approved once it holds its lease.
    void operations.worker.start();
  };
  if (operations.openedAtStart) serve();
  else {
    // Serving already: alive, not ready, operations answered as in an outage, until the database opens.
    health.waitFor("database");
    operations.opened.then(serve, (error: unknown) => {
      if (closing) return;
      if (options.onUnopenable) options.onUnopenable(error);
      else logger.error({ err: error }, "the database cannot be opened");
    });
  }
  return {
    server,
    registry,
    health,
    operations,
    async close() {
      closing = true;
      await server.close();
      await operations.close();
      await chatThread?.close();
      registry.close();
    },
  };
}
