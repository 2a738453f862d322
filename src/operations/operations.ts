import { assertSeparateSecrets, loadPrincipals, type GeneratedSecret, type PrincipalSet } from "../auth/principals.js";
import type { AgentRegistry } from "../agents/registry.js";
import { loadNetworkAccess, type NetworkAccess } from "../auth/network-access.js";
import type { ChatRunner } from "../agents/chat-runner.js";
import type { Config } from "../config.js";
import type { Logger } from "../logger.js";
import type { Database } from "../store/database.js";
import { waitForDatabase } from "../store/database-wait.js";
import { databaseTokenStore } from "../inference/daily-tokens.js";
import { createInference, type Inference } from "../inference/inference.js";
import { inferenceOperations } from "../inference/native-operations.js";
import { loadUpstreams } from "../inference/upstreams.js";
import { loadAdmissionLimits } from "./admission.js";
import { ApprovalAnnouncer, loadApprovalWebhooks } from "./approval-webhooks.js";
import { OperationsBroker } from "./broker.js";
import { systemClock, type Clock } from "./clock.js";
import { newId } from "./lifecycle.js";
import { Notifier } from "./notifier.js";
import { OnceOpen } from "./once-open.js";
import { loadPolicy, operationsAvailableTo, type Policy } from "./policy.js";
import { AgentChatProvider } from "./providers/agent-chat.js";
import { loadCredentials } from "./providers/credentials.js";
import { HttpRequestProvider } from "./providers/http-request.js";
import { nativeProvider } from "./providers/native.js";
import { gitNativeOperations } from "../git/git-operations.js";
import { ProviderRegistry } from "./providers/registry.js";
import { agentToolCallProvider } from "./providers/agent-tool-call.js";
import { operationsStore } from "./store.js";
import { transferSettingsFromEnv } from "./transfers/settings.js";
import { createTransfers, type Transfers } from "./transfers/transfers.js";
import { ExecutionWorker } from "./worker.js";

export interface Operations {
  /**
   * The database and what runs over it: until the database opens, stand-ins whose every use throws DatabaseNotOpen,
   * answered as an outage is (503 STORAGE_UNAVAILABLE, retry shortly).
   */
  database: Database;
  broker: OperationsBroker;
  /** Not started: the caller starts it once it serves, so that the lease's first queries do not hold up readiness. */
  worker: ExecutionWorker;
  /** Sealed payloads and streams (Agent V1 §6). */
  transfers: Transfers;
  /** Resolves once the database is open and the parts above are real; rejects when it cannot be opened at all. */
  opened: Promise<void>;
  /** Whether the database opened at the first try, before startOperations resolved: `opened` has resolved too. */
  openedAtStart: boolean;
  principals: { clients: PrincipalSet; operators: PrincipalSet };
  /** Secrets created on this first start, to show the administrator once. */
  generatedSecrets: (GeneratedSecret & { kind: string })[];
  operationsFor(clientId: string): string[];
  /** Which agent networks each principal may see (AXON_NETWORK_ACCESS_FILE). */
  access: NetworkAccess;
  /** Who may do what (AXON_POLICY_FILE): also what temporary networks ask for `network.reserve`. */
  policy: Policy;
  /** The lifecycle's clock. */
  clock: Clock;
  /** OpenAI's `/v1`: the model upstreams (AXON_INFERENCE_FILE), admission and each client's tokens today. */
  inference: Inference;
  close(): Promise<void>;
}

/**
 * Agent Operations V1 assembled: database, secrets, policy, admission, providers, broker, worker and sweeper. Resolves
 * after the first try to open the database: with everything ready when it opened, else with the database awaited in
 * the background (`opened`). Rejects, as its files' errors do, when the database cannot be opened at all.
 */
export async function startOperations(
  config: Config,
  logger: Logger,
  deps: { registry: AgentRegistry; chats: ChatRunner; env: NodeJS.ProcessEnv; clock?: Clock },
): Promise<Operations> {
  // The database opens while the secrets and the files load: most of an open is the disk's and the SQLite thread's
  // start, which the event loop need not wait for. A file that cannot be read stops it again.
  const waiting = waitForDatabase(config.databaseUrl, logger);
  waiting.firstTry.catch(() => undefined);
  const files = loadFiles(config, logger, deps.env).catch(async (error: unknown) => {
    waiting.stop();
    await waiting.opened.then((database) => database.close(), () => undefined);
    throw error;
  });
  const { clients, operators, policy, admission, credentials, access, upstreams, webhooks } = await files;
  const announcer = webhooks.length > 0 ? new ApprovalAnnouncer({ hooks: webhooks, logger }) : undefined;
  const clock = deps.clock ?? systemClock;
  const parts = { database: new OnceOpen<Database>(), broker: new OnceOpen<OperationsBroker>(), worker: new OnceOpen<ExecutionWorker>(), transfers: new OnceOpen<Transfers>() };
  let closeAssembled: (() => Promise<void>) | undefined;
  // Its token counts are read and written only once the database is open (before, a budget check is an outage).
  const inference = createInference({ upstreams, limits: admission, tokenStore: databaseTokenStore(parts.database.standIn), clock, logger });

  // Sealed bodies are opened at execution, which begins only once the database is open.
  const sealedBodies = { consume: (clientId: string, id: string) => parts.transfers.get().sealedPayloads.consume(clientId, id) };
  const providers = new ProviderRegistry([
    new AgentChatProvider({ registry: deps.registry, access, chats: deps.chats }),
    new HttpRequestProvider({ credentials, sealedBodies, timeoutMs: config.httpRequestTimeoutSeconds * 1000 }),
    // Git smart HTTP and LFS: decided here, executed by their routes (src/git/).
    ...gitNativeOperations.map(nativeProvider),
    agentToolCallProvider,
    ...inferenceOperations.map(nativeProvider),
  ]);

  const assemble = async (database: Database): Promise<void> => {
    const transfers = await createTransfers({ database, settings: transferSettingsFromEnv(deps.env), dataDir: config.dataDir, logger, clock });

    const store = operationsStore(database);
    const notifier = new Notifier();
    // Replicas sharing PostgreSQL wake each other's waits, watches and workers.
    const replicas =
      database.provider === "postgresql"
        ? await (await import("../store/replica-notifications.js")).listenToReplicas(config.databaseUrl, (message) => notifier.receivedFromReplica(message), logger)
        : undefined;
    if (replicas) notifier.publishTo((message) => replicas.publish(message));
    const replicaId = newId("replica");
    const broker = new OperationsBroker({ store, policy, admission, providers, notifier, logger, clock, replicaId, ...(announcer ? { announcer } : {}) });
    const worker = new ExecutionWorker({
      id: replicaId,
      store: operationsStore(database, database.background),
      providers,
      notifier,
      logger,
      clock,
      leaseMs: config.replicaLeaseSeconds * 1000,
    });
    const sweeper = setInterval(() => void broker.sweep().catch((error: unknown) => logger.error({ err: error }, "sweep failed")), 10_000);
    sweeper.unref();
    parts.database.set(database);
    parts.transfers.set(transfers);
    parts.broker.set(broker);
    parts.worker.set(worker);
    closeAssembled = async () => {
      clearInterval(sweeper);
      await worker.stop();
      await broker.native.flush();
      await inference.tokens.flush();
      await announcer?.close();
      await replicas?.close();
      transfers.close();
      await database.close();
    };
  };

  const opened = waiting.opened.then(assemble);
  // A first try that fails for good rejects startOperations itself: `opened`, rejecting with it, is nobody's to catch.
  opened.catch(() => undefined);
  // Opened at the first try: everything is ready now, as callers without a late database expect.
  const openedAtStart = await waiting.firstTry;
  if (openedAtStart) await opened;

  return {
    database: parts.database.standIn,
    broker: parts.broker.standIn,
    worker: parts.worker.standIn,
    transfers: parts.transfers.standIn,
    opened,
    openedAtStart,
    principals: { clients: clients.principals, operators: operators.principals },
    generatedSecrets: [
      ...clients.generated.map((secret) => ({ ...secret, kind: "client" })),
      ...operators.generated.map((secret) => ({ ...secret, kind: "operator" })),
    ],
    operationsFor: (clientId) => operationsAvailableTo(policy, clientId, providers.submittable()),
    access,
    policy,
    clock,
    inference,
    async close() {
      waiting.stop();
      await opened.catch(() => undefined);
      await closeAssembled?.();
    },
  };
}

/** The secrets (made on a first start) and the files operations are configured by. */
async function loadFiles(config: Config, logger: Logger, env: NodeJS.ProcessEnv) {
  const clients = await loadPrincipals(config.clientsFile, "client", { generateIfMissing: { names: ["local"] }, logger });
  const operators = await loadPrincipals(config.operatorsFile, "operator", { generateIfMissing: { names: ["admin"] }, logger });
  assertSeparateSecrets(clients.principals, operators.principals);
  const { projectRoot } = config;
  const [policy, admission, credentials, access, upstreams, webhooks] = await Promise.all([
    loadPolicy(config.policyFile, { projectRoot }),
    loadAdmissionLimits(config.admissionFile, { projectRoot }),
    loadCredentials(config.credentialsFile, env, { projectRoot }),
    loadNetworkAccess(config.networkAccessFile, { projectRoot }),
    loadUpstreams(config.inferenceFile, env, { projectRoot }),
    loadApprovalWebhooks(config.approvalWebhooksFile, env, { projectRoot }),
  ]);
  return { clients, operators, policy, admission, credentials, access, upstreams, webhooks };
}
