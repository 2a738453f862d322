// The server `npm start` runs (src/main.ts loads it): configuration, logger, tracing, Axon, the start-up line and the
// signals that drain.
import { startAxon, type Axon } from "./axon.js";
import { loadConfig } from "./config.js";
import { createLogger } from "./logger.js";
import { providerOf } from "./store/database.js";
import { startTracing } from "./telemetry/start.js";

const config = loadConfig();
const logger = createLogger(config.logLevel);
const stopTracing = await startTracing(process.env);
let stopping = false;
// A configuration waiting cannot fix (a broken file, a malformed DATABASE_URL, refused credentials): one line, then out.
const axon = await startAxon(config, logger, { onUnopenable: (error) => void stopFor(error) }).catch((error: unknown) => {
  exit(1, cannotStart(error));
  return undefined;
});
if (axon) announce(axon);

/** The start-up line, the first start's secrets, and the signals that drain. */
function announce(axon: Axon): void {
  const [httpPort, grpcPort] = axon.server.ports;
  const { generatedSecrets } = axon.operations;
  const url = `${config.tls ? "https" : "http"}://localhost:${httpPort}`;
  logger.info(
    {
      url,
      tls: config.tls ? (config.tls.clientCaFile ? "mutual" : "server") : "off",
      neuro_san_grpc_port: grpcPort,
      manifest: config.manifestFile,
      networks: axon.registry.listPublic().map((agent) => agent.agentName),
      database: providerOf(config.databaseUrl),
      llm: describeLlm(process.env),
    },
    `Axon is serving gRPC, gRPC-Web, Connect and REST on ${url}`,
  );

  // Shown once, on the terminal rather than in the logs: the files keep them, the logs never carry a secret.
  if (generatedSecrets.length > 0) {
    const lines = generatedSecrets.map(({ kind, name, secret }) => `  ${kind.padEnd(8)} ${name.padEnd(8)} ${secret}`);
    process.stderr.write(
      `\nFirst start: new secrets (kept in ${config.clientsFile} and ${config.operatorsFile}; shown only now):\n${lines.join("\n")}\n` +
        `Use them as "Authorization: Bearer <secret>" on /api/agent/v1 (client) and /api/operator/v1 (operator).\n\n`,
    );
  }

  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    process.on(signal, () => {
      if (stopping) return;
      stopping = true;
      logger.info({ signal, grace_seconds: config.shutdownGraceSeconds }, "draining");
      // Spans still batched go out once the calls that made them have drained.
      axon.close().then(stopTracing).then(
        () => exit(0, "stopped"),
        (error: unknown) => exit(1, "shutdown failed", error),
      );
    });
  }
}

/** Which LLM providers the environment connects, as a person reading the start-up line needs to know. */
function describeLlm(env: NodeJS.ProcessEnv): string {
  const connected = [
    env.OPENAI_API_KEY || env.OPENAI_BASE_URL ? "openai" : undefined,
    env.ANTHROPIC_API_KEY ? "anthropic" : undefined,
    env.AZURE_OPENAI_API_KEY ? "azure-openai" : undefined,
    env.OLLAMA_HOST ? "ollama" : undefined,
  ].filter(Boolean);
  if (env.AXON_DEMO) return "DEMO MODE: every network answers from the scripted test LLM, not a real model";
  return connected.length > 0
    ? connected.join(", ")
    : "none configured: chat is refused until OPENAI_API_KEY, ANTHROPIC_API_KEY or OLLAMA_HOST is set (or try npm run demo)";
}

/** The database, awaited since the start, turned out to be misconfigured: the same one line, after a drain. */
async function stopFor(error: unknown): Promise<void> {
  if (stopping) return;
  stopping = true;
  await axon?.close().catch(() => undefined);
  exit(1, cannotStart(error));
}

function cannotStart(error: unknown): string {
  return `cannot start: ${error instanceof Error ? error.message : String(error)}`;
}

/**
 * Ends by letting the event loop empty, so the asynchronous log writes still go out; a forced exit follows
 * only if some handle would keep the process alive.
 */
function exit(code: number, message: string, error?: unknown): void {
  if (error) logger.error({ err: error }, message);
  else if (code !== 0) logger.fatal(message);
  else logger.info(message);
  process.exitCode = code;
  setTimeout(() => process.exit(code), 2000).unref();
}
