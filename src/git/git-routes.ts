import { randomUUID } from "node:crypto";
import { SpanKind } from "@opentelemetry/api";
import { Code } from "../errors.js";
import type { Logger } from "../logger.js";
import type { Clock } from "../operations/clock.js";
import type { NativeCalls } from "../operations/native-calls.js";
import type { Authenticator } from "../server/authenticate.js";
import { certificateNamesOf } from "../server/client-certificate.js";
import type { HttpRequest, HttpResponse } from "../server/listener.js";
import type { Metrics } from "../server/metrics.js";
import { httpStatusOf, isExpected, toConnectError } from "../server/status.js";
import { traced } from "../telemetry/tracing.js";
import { answerText, type GitExchange, type GitRecord, type GitServices } from "./git-exchange.js";
import { GITHUB_WEBHOOK_PATH, receiveGitHubWebhook } from "./github-webhooks.js";
import type { GitHosts } from "./hosts.js";
import { answerLfs } from "./lfs-answers.js";
import { lfsBatch } from "./lfs-batch.js";
import { LfsCapabilities } from "./lfs-capabilities.js";
import { lfsLocks } from "./lfs-locks.js";
import { lfsTransfer } from "./lfs-objects.js";
import { receivePack } from "./receive-pack.js";
import { GIT_PREFIX, resolveGitRoute, type GitRoute } from "./repository.js";
import { UpstreamCredentials } from "./upstream-credentials.js";
import { advertiseRefs, uploadPack } from "./upload-pack.js";

export interface GitRoutesOptions {
  hosts: GitHosts;
  /** The operations broker (a stand-in until the database opens): its `native` decides every Git call. */
  broker: { readonly native: Pick<NativeCalls, "hold" | "audit"> };
  authenticator: Pick<Authenticator, "client">;
  logger: Logger;
  metrics: Metrics;
  clock: Clock;
  spoolDirectory: string;
  maxPushBytes: number;
  /** Aborts what still runs (a push held for an operator) when the server's grace period is over. */
  shutdownSignal: AbortSignal;
}

export interface GitRoutes {
  /** Whether the path is one of these routes': `/git/...` or the GitHub webhook. */
  serves(path: string): boolean;
  /** Answers a request whose path `serves`. */
  handle(req: HttpRequest, res: HttpResponse): Promise<void>;
}

/** Git's own challenge, so that it asks its credential helper for the Axon client secret. */
const CHALLENGE = 'Basic realm="Axon", charset="UTF-8"';
const LFS_OBJECT = /^info\/lfs\/objects\/([A-Za-z0-9_-]{43})$/;

/**
 * Git smart HTTP and LFS for agents, under `/git/<host>/<owner>/<repo>.git/...`, and the GitHub App webhook. Every
 * request is authenticated with the Axon client secret (HTTP Basic password or bearer), decided by `NativeCalls`,
 * carried out with the host's credential (which no answer, log line or span ever holds), and recorded: one log
 * line, the Git metrics and a span per request. Nothing else of Axon is reachable under these paths.
 */
export function createGitRoutes(options: GitRoutesOptions): GitRoutes {
  const { hosts, authenticator, logger, metrics } = options;
  const credentials = new UpstreamCredentials(hosts, options.clock);
  const capabilities = new LfsCapabilities(options.clock);
  const services: GitServices = {
    native: () => options.broker.native,
    credentials,
    spoolDirectory: options.spoolDirectory,
    maxPushBytes: options.maxPushBytes,
    shutdownSignal: options.shutdownSignal,
  };

  async function serve(req: HttpRequest, res: HttpResponse, path: string, query: string): Promise<void> {
    const record: GitRecord = { service: "git", bytesIn: 0, bytesOut: 0, outcome: "failed" };
    const started = performance.now();
    const route = resolveGitRoute(path, hosts);
    const partial = { req, res, record };
    if (route === undefined || "unknownHost" in route) {
      record.code = "not_found";
      answerText(partial, 404, route === undefined ? "no Git repository at this path (/git/<host>/<owner>/<repo>.git/...)" : `no Git host named ${route.unknownHost} is configured`);
      return void log(record, undefined, started);
    }
    const lfs = route.service.startsWith("info/lfs");
    const capabilityId = LFS_OBJECT.exec(route.service)?.[1];
    let clientId: string;
    try {
      const presented = gitCredentials(req);
      // A capability carries its own authority; credentials presented with it must name the client it was issued to.
      clientId = capabilityId !== undefined && presented.authorization === undefined && presented.certificateNames === undefined ? "" : (await authenticator.client(presented)).name;
    } catch {
      record.code = "unauthenticated";
      const message = "a valid Axon client secret is required (as the HTTP Basic password, or a bearer)";
      if (lfs) answerLfs(partial, 401, message, { "www-authenticate": CHALLENGE, "lfs-authenticate": CHALLENGE });
      else answerText(partial, 401, message, { "www-authenticate": CHALLENGE });
      return void log(record, route, started);
    }
    const abort = new AbortController();
    const onClose = () => {
      if (!res.writableFinished) abort.abort();
    };
    res.once("close", onClose);
    const signal = AbortSignal.any([abort.signal, options.shutdownSignal]);
    const exchange: GitExchange = { req, res, clientId, repository: route.repository, signal, record };
    // A capability is a bearer of authority: it names no span and no log line.
    const service = capabilityId === undefined ? route.service : "info/lfs/objects/{capability}";
    const attributes = { "axon.git.host": route.repository.host.name, "axon.git.repository": `${route.repository.owner}/${route.repository.name}`, "axon.git.service": service };
    try {
      await traced(`git ${service}`, SpanKind.SERVER, attributes, () => dispatch(exchange, route, capabilityId, query), (span) =>
        span.setAttributes({
          "enduser.id": exchange.clientId,
          "axon.git.outcome": record.outcome,
          ...(record.operation ? { "axon.operation.name": record.operation } : {}),
          ...(record.decision ? { "axon.git.decision": record.decision } : {}),
          ...(record.upstreamStatus ? { "http.response.status_code": record.upstreamStatus } : {}),
          "axon.git.bytes_in": record.bytesIn,
          "axon.git.bytes_out": record.bytesOut,
          ...(record.updates ? { "axon.git.updates": record.updates.map((update) => `${String(update.ref)} ${String(update.class)}`) } : {}),
        }),
      );
    } catch (error) {
      answerFailure(exchange, error, lfs, service);
    } finally {
      res.off("close", onClose);
      log(record, route, started, exchange.clientId);
    }
  }

  async function dispatch(exchange: GitExchange, route: GitRoute, capabilityId: string | undefined, query: string): Promise<void> {
    const method = exchange.req.method ?? "GET";
    const { service } = route;
    if (service === "info/refs" && (method === "GET" || method === "HEAD")) return advertiseRefs(exchange, services, new URLSearchParams(query));
    if (service === "git-upload-pack" && method === "POST") return uploadPack(exchange, services);
    if (service === "git-receive-pack" && method === "POST") return receivePack(exchange, services);
    if (service === "info/lfs/objects/batch" && method === "POST") return lfsBatch(exchange, services, capabilities);
    if (capabilityId !== undefined) {
      const capability = capabilities.find(capabilityId, exchange.clientId === "" ? undefined : exchange.clientId, route.repository.host.name, route.repository.path);
      if (capability === undefined) {
        exchange.record.code = "lfs_capability_unknown";
        return answerLfs(exchange, 404, "this LFS transfer is unknown or has expired: run the command again");
      }
      exchange.clientId = capability.clientId;
      return lfsTransfer(exchange, capability);
    }
    if (service.startsWith("info/lfs/locks")) return lfsLocks(exchange, services, service, query);
    exchange.record.code = "not_found";
    if (service.startsWith("info/lfs")) return answerLfs(exchange, 404, "no such LFS route");
    const allow = service === "info/refs" ? "GET" : "POST";
    return answerText(exchange, 405, `${service} takes ${allow}`, { allow });
  }

  /** What was not answered already: an admission refusal, a database not open yet, or a bug (never its text). */
  function answerFailure(exchange: GitExchange, error: unknown, lfs: boolean, service: string): void {
    const status = toConnectError(error);
    const exhausted = status.code === Code.ResourceExhausted;
    exchange.record.outcome = "failed";
    exchange.record.code ??= exhausted ? "resource_exhausted" : status.code === Code.Unavailable ? "unavailable" : "internal";
    if (!isExpected(error)) logger.error({ err: error, category: "git", host: exchange.repository.host.name, service }, "git request failed");
    const retryAfter = status.metadata.get("retry-after");
    const headers: Record<string, string> = retryAfter === null ? {} : { "retry-after": retryAfter };
    const httpStatus = exhausted ? 429 : httpStatusOf(status.code);
    if (lfs) answerLfs(exchange, httpStatus, status.rawMessage, headers);
    else answerText(exchange, httpStatus, status.rawMessage, headers);
  }

  function log(record: GitRecord, route: GitRoute | undefined, started: number, clientId?: string): void {
    const ms = Math.round(performance.now() - started);
    const host = route?.repository.host.name;
    metrics.gitRequest({ host: host ?? "", service: record.service, outcome: record.outcome, bytesIn: record.bytesIn, bytesOut: record.bytesOut, seconds: ms / 1000 });
    logger.info(
      {
        category: "git",
        request_id: randomUUID(),
        client_id: clientId || undefined,
        host,
        repository: route ? `${route.repository.owner}/${route.repository.name}` : undefined,
        service: record.service,
        operation: record.operation,
        updates: record.updates,
        decision: record.decision,
        upstream_status: record.upstreamStatus,
        bytes_in: record.bytesIn,
        bytes_out: record.bytesOut,
        outcome: record.outcome,
        code: record.code,
        ms,
      },
      "git request",
    );
  }

  return {
    serves: (path) => path.startsWith(GIT_PREFIX) || path === GITHUB_WEBHOOK_PATH,
    async handle(req, res) {
      const url = req.url ?? "/";
      const queryAt = url.indexOf("?");
      const path = queryAt < 0 ? url : url.slice(0, queryAt);
      if (path === GITHUB_WEBHOOK_PATH) return receiveGitHubWebhook(req, res, { hosts, credentials, logger, audit: (entry) => services.native().audit(entry) });
      await serve(req, res, path, queryAt < 0 ? "" : url.slice(queryAt));
    },
  };
}

/** The Axon secret as Git sends it (the HTTP Basic password, any user name) or as a bearer, and a client certificate. */
function gitCredentials(req: HttpRequest): { authorization: string | undefined; certificateNames: readonly string[] | undefined } {
  const header = req.headers.authorization;
  const basic = typeof header === "string" ? /^\s*basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header)?.[1] : undefined;
  let authorization = header;
  if (basic !== undefined) {
    const decoded = Buffer.from(basic, "base64").toString("utf8");
    const colon = decoded.indexOf(":");
    authorization = colon < 0 ? undefined : `Bearer ${decoded.slice(colon + 1)}`;
  }
  const names = certificateNamesOf(req.socket);
  return { authorization, certificateNames: names && names.length > 0 ? names : undefined };
}
