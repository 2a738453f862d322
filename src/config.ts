import path from "node:path";
import { manifestFilesOf } from "./agents/manifest.js";
import { jwtSettingsFromEnv, type JwtSettings } from "./auth/jwt.js";

/** Everything Axon reads from its environment, read once, in one place. */
export interface Config {
  httpPort: number;
  /** neuro-san's gRPC port (30011) for its old clients; 0 = off. */
  grpcPort: number;
  host: string;
  manifestFile: string;
  toolPath: string;
  projectRoot: string;
  /** `AXON_PYTHON`: the interpreter Python coded tools and library tools run in; a virtualenv's `bin/python` brings its packages. */
  python: string;
  /** `AXON_PYTHON_WORKERS`: Python worker processes at most; 0 = one per core. */
  pythonWorkers: number;
  /** `AXON_PYTHON_CANCEL_GRACE_SECONDS`: how long a cancelled Python tool may take to end before its worker is killed. */
  pythonCancelGraceSeconds: number;
  maxConcurrentRequests: number;
  manifestUpdatePeriodSeconds: number;
  allowCorsHeaders: string | undefined;
  forwardedRequestMetadata: string[];
  dataDir: string;
  logLevel: string;
  /** `file:...` (SQLite) or `postgresql://...`. */
  databaseUrl: string;
  clientsFile: string;
  operatorsFile: string;
  policyFile: string | undefined;
  admissionFile: string | undefined;
  credentialsFile: string | undefined;
  /** `AXON_INFERENCE_FILE`: the model upstreams `/v1/chat/completions` brokers for agents. */
  inferenceFile: string | undefined;
  /** Where new pending requests are announced (AXON_APPROVAL_WEBHOOKS_FILE). */
  approvalWebhooksFile: string | undefined;
  /** `AGENT_TOOLBOX_INFO_FILE`: extends the built-in toolbox. */
  toolboxInfoFile: string | undefined;
  /** `AGENT_MCP_INFO_FILE` (or neuro-san's older `MCP_SERVERS_INFO_FILE`): headers per MCP server. */
  mcpInfoFile: string | undefined;
  /** `AGENT_LLM_INFO_FILE`: model names and classes beyond Axon's own table. */
  llmInfoFile: string | undefined;
  /** `AGENT_MCP_ENABLE`: neuro-san's MCP service at `/mcp` (default on). */
  mcpEnable: boolean;
  /** `AGENT_MCP_ONLY`: `/mcp` without neuro-san's own API (AgentService, ConciergeService on every transport). */
  mcpOnly: boolean;
  /** Largest request body or message accepted, in bytes. */
  maxRequestBytes: number;
  /** How long a connection may take to send a request's headers (and its first byte). */
  headersTimeoutSeconds: number;
  /** How long a request may take to send its whole body once its headers are in; then 408 (HTTP/1.1) or a reset. */
  bodyTimeoutSeconds: number;
  /** How long an HTTP/2 connection may stay open without a stream. */
  idleTimeoutSeconds: number;
  /** Bytes of unauthenticated request bodies held in memory at once, across all connections; past it, 503. */
  unauthenticatedBodyBytes: number;
  /**
   * Keep-alive AGENT_PROGRESS on every idle chat stream (MINIMAL too) after this many seconds; 0 = off.
   * neuro-san's `AGENT_STREAM_KEEP_ALIVE_WITH_PROGRESS_INTERVAL_SECONDS`, or Axon's older `AGENT_HEARTBEAT_SECONDS`.
   */
  heartbeatSeconds: number;
  /** How long in-flight streams may run after SIGTERM before they are cancelled. */
  shutdownGraceSeconds: number;
  /** How long a replica's claim on the operations it executes outlives its last heartbeat. */
  replicaLeaseSeconds: number;
  /** How long an `http.request` operation waits for its upstream before its outcome is unknown. */
  httpRequestTimeoutSeconds: number;
  /** `AXON_NETWORK_ACCESS_FILE`: which networks each principal may see; undefined = every network open to everyone. */
  networkAccessFile: string | undefined;
  /** `AXON_TRUST_USER_ID_METADATA=true`: a trusted proxy sets neuro-san's `user_id`, so it names the caller. */
  trustUserIdMetadata: boolean;
  /** Bearer JWTs from an identity provider (`AXON_JWT_*`), when `AXON_JWT_ISSUER` is set. */
  jwt: JwtSettings | undefined;
  /** TLS on every port (`AXON_TLS_*`), when a certificate and key are set. */
  tls: TlsSettings | undefined;
  /** `AGENT_MAX_TEMP_NETWORKS`: temporary networks served at once, across replicas; 0 = no limit. */
  maxTemporaryNetworks: number;
  /** `AXON_TEMPORARY_NETWORK_MAX_SECONDS`: the longest lifetime a temporary network is granted (neuro-san's 24 h). */
  maxTemporaryNetworkSeconds: number;
  /** `AGENT_EXTERNAL_SERVER_URL`: how the outside world reaches this server, for temporary networks' URLs. */
  externalServerUrl: string | undefined;
  /** `AXON_PERIODIC_CLIENT`: the client `periodic` schedules submit their agent.chat operations as. */
  periodicClient: string;
  /** `AXON_PERIODIC_MISSED_TICKS`: a tick missed while every replica was down runs once on return (`run`) or not (`skip`). */
  periodicMissedTicks: "run" | "skip";
}

export interface TlsSettings {
  certFile: string;
  keyFile: string;
  /** Client certificates from this CA are asked for and verified (mTLS). */
  clientCaFile: string | undefined;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env, projectRoot = process.cwd()): Config {
  const dataDir = path.resolve(projectRoot, env.AXON_DATA_DIR ?? "data");
  return {
    httpPort: integer(env, "AGENT_HTTP_PORT", 8080),
    grpcPort: integer(env, "AGENT_PORT", 0),
    host: env.AXON_HOST ?? "0.0.0.0",
    // One manifest or several, each resolved against the project root; kept joined by `:`.
    manifestFile: manifestFilesOf(env.AGENT_MANIFEST_FILE || "registries/manifest.hocon", projectRoot).join(":"),
    toolPath: path.resolve(projectRoot, env.AGENT_TOOL_PATH ?? "coded_tools"),
    projectRoot,
    python: env.AXON_PYTHON || "python3",
    pythonWorkers: integer(env, "AXON_PYTHON_WORKERS", 0),
    pythonCancelGraceSeconds: integer(env, "AXON_PYTHON_CANCEL_GRACE_SECONDS", 5),
    maxConcurrentRequests: integer(env, "AGENT_MAX_CONCURRENT_REQUESTS", 0),
    manifestUpdatePeriodSeconds: integer(env, "AGENT_MANIFEST_UPDATE_PERIOD_SECONDS", 0),
    allowCorsHeaders: env.AGENT_ALLOW_CORS_HEADERS || undefined,
    forwardedRequestMetadata: (env.AGENT_FORWARDED_REQUEST_METADATA ?? "request_id user_id").split(/[\s,]+/).filter(Boolean),
    dataDir,
    databaseUrl: env.DATABASE_URL || `file:${path.join(dataDir, "axon.db")}`,
    clientsFile: path.resolve(projectRoot, env.AXON_CLIENTS_FILE ?? path.join(dataDir, "clients")),
    operatorsFile: path.resolve(projectRoot, env.AXON_OPERATORS_FILE ?? path.join(dataDir, "operators")),
    policyFile: optionalPath(projectRoot, env.AXON_POLICY_FILE),
    admissionFile: optionalPath(projectRoot, env.AXON_ADMISSION_FILE),
    credentialsFile: optionalPath(projectRoot, env.AXON_CREDENTIALS_FILE),
    inferenceFile: optionalPath(projectRoot, env.AXON_INFERENCE_FILE),
    approvalWebhooksFile: optionalPath(projectRoot, env.AXON_APPROVAL_WEBHOOKS_FILE),
    toolboxInfoFile: optionalPath(projectRoot, env.AGENT_TOOLBOX_INFO_FILE),
    mcpInfoFile: optionalPath(projectRoot, env.AGENT_MCP_INFO_FILE || env.MCP_SERVERS_INFO_FILE),
    llmInfoFile: optionalPath(projectRoot, env.AGENT_LLM_INFO_FILE),
    mcpEnable: boolean(env, "AGENT_MCP_ENABLE", true) || boolean(env, "AGENT_MCP_ONLY", false),
    mcpOnly: boolean(env, "AGENT_MCP_ONLY", false),
    logLevel: env.LOG_LEVEL ?? "info",
    maxRequestBytes: integer(env, "AXON_MAX_REQUEST_BYTES", 4 * 1024 * 1024),
    headersTimeoutSeconds: integer(env, "AXON_HEADERS_TIMEOUT_SECONDS", 20, 1),
    bodyTimeoutSeconds: integer(env, "AXON_BODY_TIMEOUT_SECONDS", 30, 1),
    idleTimeoutSeconds: integer(env, "AXON_IDLE_TIMEOUT_SECONDS", 60, 1),
    unauthenticatedBodyBytes: integer(env, "AXON_UNAUTHENTICATED_BODY_BYTES", 64 * 1024 * 1024, 1),
    shutdownGraceSeconds: integer(env, "AXON_SHUTDOWN_GRACE_SECONDS", 10),
    heartbeatSeconds: integer(env, "AGENT_STREAM_KEEP_ALIVE_WITH_PROGRESS_INTERVAL_SECONDS", integer(env, "AGENT_HEARTBEAT_SECONDS", 0)),
    replicaLeaseSeconds: integer(env, "AXON_REPLICA_LEASE_SECONDS", 15, 1),
    httpRequestTimeoutSeconds: integer(env, "AXON_HTTP_REQUEST_TIMEOUT_SECONDS", 30, 1),
    networkAccessFile: optionalPath(projectRoot, env.AXON_NETWORK_ACCESS_FILE),
    trustUserIdMetadata: boolean(env, "AXON_TRUST_USER_ID_METADATA", false),
    jwt: jwtSettingsFromEnv(env, (file) => path.resolve(projectRoot, file)),
    tls: tlsSettings(env, projectRoot),
    maxTemporaryNetworks: integer(env, "AGENT_MAX_TEMP_NETWORKS", 0, Number.MIN_SAFE_INTEGER),
    maxTemporaryNetworkSeconds: integer(env, "AXON_TEMPORARY_NETWORK_MAX_SECONDS", 24 * 60 * 60, 1),
    externalServerUrl: env.AGENT_EXTERNAL_SERVER_URL?.trim().replace(/\/+$/, "") || undefined,
    periodicClient: env.AXON_PERIODIC_CLIENT || "system",
    periodicMissedTicks: oneOf(env, "AXON_PERIODIC_MISSED_TICKS", ["run", "skip"] as const, "run"),
  };
}

function oneOf<T extends string>(env: NodeJS.ProcessEnv, name: string, allowed: readonly T[], fallback: T): T {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === "") return fallback;
  if ((allowed as readonly string[]).includes(raw)) return raw as T;
  throw new Error(`${name} must be ${allowed.join(" or ")}, got ${JSON.stringify(env[name])}`);
}

function tlsSettings(env: NodeJS.ProcessEnv, projectRoot: string): TlsSettings | undefined {
  const certFile = optionalPath(projectRoot, env.AXON_TLS_CERT_FILE);
  const keyFile = optionalPath(projectRoot, env.AXON_TLS_KEY_FILE);
  const clientCaFile = optionalPath(projectRoot, env.AXON_TLS_CLIENT_CA_FILE);
  if (certFile === undefined && keyFile === undefined && clientCaFile === undefined) return undefined;
  if (certFile === undefined || keyFile === undefined) throw new Error("TLS needs both AXON_TLS_CERT_FILE and AXON_TLS_KEY_FILE");
  return { certFile, keyFile, clientCaFile };
}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min = 0): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) {
    throw new Error(`${name} must be an integer of at least ${min}, got ${JSON.stringify(raw)}`);
  }
  return value;
}

function boolean(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === "") return fallback;
  if (["true", "1", "yes", "on"].includes(raw)) return true;
  if (["false", "0", "no", "off"].includes(raw)) return false;
  throw new Error(`${name} must be true or false, got ${JSON.stringify(env[name])}`);
}

function optionalPath(projectRoot: string, value: string | undefined): string | undefined {
  return value ? path.resolve(projectRoot, value) : undefined;
}
