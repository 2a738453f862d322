import type { ChatRunner } from "./agents/chat-runner.js";
import { ChatThread } from "./agents/chat-thread/chat-thread.js";
import { AgentRegistry } from "./agents/registry.js";
import type { DeployTemporaryNetworks } from "./agents/temporary-networks.js";
import { JwtVerifier } from "./auth/jwt.js";
import { loadGitHosts } from "./git/hosts.js";
import type { Config } from "./config.js";
import type { Logger } from "./logger.js";
import { startOperations, type Operations } from "./operations/operations.js";
import { contractDigest } from "./server/descriptors.js";
import { systemClock, type Clock } from "./operations/clock.js";
import { PeriodicRuns } from "./operations/periodic-runs.js";
import { TemporaryNetworkSync } from "./reservations/temporary-network-sync.js";
import { TemporaryNetworks } from "./reservations/temporary-networks.js";
import { HealthState } from "./server/health.js";
import { providerOf } from "./store/database.js";
import { startServer, type AxonServer } from "./server/server.js";
import { toolCallHolds } from "./operations/providers/agent-tool-call.js";

export interface Axon {
  server: AxonServer;
  registry: AgentRegistry;
  health: HealthState;
  operations: Operations;
  temporaryNetworks: TemporaryNetworks;
  /** The manifests' `periodic` schedules, looked at every second once the database is open. */
  periodicRuns: PeriodicRuns;
  /** Drains the server, then stops the registry's reloads. */
  close(): Promise<void>;
}

/** How often a replica sharing PostgreSQL reads the temporary networks again, for what the others changed. */
const temporaryNetworkPollMs = 2_000;

/** The composition root: registry, agent runtime and server, assembled the one way `npm start` runs them. */
export async function startAxon(
  config: Config,
  logger: Logger,
  options: {
    env?: NodeJS.ProcessEnv;
    chats?: ChatRunner;
    /** Told when a database awaited after start cannot be opened after all (a wrong database name, say): stop then. */
    onUnopenable?: (error: unknown) => void;
    /** The one clock of operations, temporary networks and schedules; the system's by default. */
    clock?: Clock;
  } = {},
): Promise<Axon> {
  const env = options.env ?? process.env;
  const clock = options.clock ?? systemClock;
  const { manifestFile, projectRoot, toolPath, toolboxInfoFile, mcpInfoFile, llmInfoFile } = config;
  let sync: TemporaryNetworkSync | undefined;
  const registry = new AgentRegistry({
    ...{ manifestFile, projectRoot, toolPath, toolboxInfoFile, mcpInfoFile, llmInfoFile },
    ...{ environment: env, logger, python: config.python, clock },
    refreshTemporaryNetworks: () => sync?.refresh() ?? Promise.resolve(),
  });
  // Chats (StreamingChat and agent.chat operations) run on a thread of their own, off the loop that serves requests.
  const deployTemporaryNetworks: DeployTemporaryNetworks = (owner, deployments) => temporaryNetworks.deploy(owner, deployments);
  const chatThread: ChatThread | undefined = options.chats ? undefined : new ChatThread({ config, env, logger, deployTemporaryNetworks });
  const chats = options.chats ?? chatThread!;
  // The networks are read while the database opens: the one is mostly the HOCON parser's work, the other mostly
  // waiting for the disk and the SQLite thread, so the database goes first, its thread starting while the networks
  // parse. Nothing reads the registry before both are done.
  const starting = startOperations(config, logger, { registry, chats, env, clock });
  const loading = registry.reload({ throwOnBrokenManifest: true });
  loading.catch(() => undefined); // awaited below, once operations have started
  const operations = await starting.catch(async (error: unknown) => {
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
  const temporaryNetworks: TemporaryNetworks = new TemporaryNetworks({
    database: operations.database,
    clock,
    policy: operations.policy,
    limits: { maxNetworks: config.maxTemporaryNetworks, maxLifetimeSeconds: config.maxTemporaryNetworkSeconds, externalServerUrl: config.externalServerUrl },
    registry,
    changed: () => sync!.refresh(),
  });
  sync = new TemporaryNetworkSync({
    read: () => temporaryNetworks.served(),
    serve: (specs) => {
      registry.setTemporaryNetworks(specs);
      chatThread?.setTemporaryNetworks(specs);
    },
    sweep: () => temporaryNetworks.sweep(),
    logger,
    clock,
    // Only replicas sharing PostgreSQL change them behind this process's back.
    pollMs: providerOf(config.databaseUrl) === "postgresql" ? temporaryNetworkPollMs : 0,
    sweepMs: 60_000,
  });
  if (operations.access.isOpen) logger.info("no AXON_NETWORK_ACCESS_FILE: every agent network is open to every caller");
  else logger.info({ file: operations.access.source }, "agent networks are granted per principal");
  const tokens = config.jwt && (await JwtVerifier.create(config.jwt, { logger }));
  const gitHosts = await loadGitHosts(config.gitHostsFile, env, { projectRoot }).catch(async (error: unknown) => {
    await operations.close();
    throw error;
  });
  const health = new HealthState();
  const server = await startServer({
    config,
    logger,
    tokens,
    gitHosts,
    registry,
    chats,
    health,
    operations: {
      broker: operations.broker,
      principals: operations.principals,
      access: operations.access,
      transfers: operations.transfers,
      temporaryNetworks,
      inference: operations.inference,
      descriptor: {
        contractDigest,
        buildId: env.AXON_BUILD_ID ?? `axon-${process.env.npm_package_version ?? "dev"}`,
        operationsFor: operations.operationsFor,
      },
    },
  });
  const periodicRuns = new PeriodicRuns({
    registry,
    broker: operations.broker,
    database: operations.database,
    clock,
    logger,
    clientId: config.periodicClient,
    missedTicks: config.periodicMissedTicks,
  });
  let closing = false;
  const serve = async (): Promise<void> => {
    // The temporary networks kept in the database are served from readiness on, as the manifest's are.
    await sync!.start();
    health.markReady();
    // Submissions are stored from now on; the worker executes what is approved once it holds its lease.
    void operations.worker.start();
    periodicRuns.start();
  };
  if (operations.openedAtStart) await serve();
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
    temporaryNetworks,
    periodicRuns,
    async close() {
      closing = true;
      sync?.close();
      periodicRuns.close();
      await server.close();
      await operations.close();
      await chatThread?.close();
      registry.close();
    },
  };
}
