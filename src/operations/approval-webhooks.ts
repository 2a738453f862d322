import { createHmac, randomUUID } from "node:crypto";
import path from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { HoconError, parseHoconFile, type JsonValue } from "../agents/hocon.js";
import type { Logger } from "../logger.js";
import type { GrantRow, OperationRow } from "./store.js";

/**
 * Approval webhooks: every new pending request (an operation's approval, a grant asked for ahead, a held push or tool
 * call) is announced to the operators' webhooks, as Slack's incoming-webhook JSON or a generic JSON body signed with
 * HMAC-SHA256, off the decision's path: a slow or failing receiver never delays one. A delivery that fails is tried
 * again with backoff; one lost with its process is not (the request is in the console and the feed regardless).
 */

export interface ApprovalWebhook {
  name: string;
  /** Slack's incoming-webhook URL holds its own secret: it may come from the environment (`url_env`). */
  url: string;
  format: "slack" | "json";
  /** The key the generic body is signed with (`X-Axon-Signature-256`). */
  secret?: string;
}

/** A request as announced: the grant row, and the operation (or held call) that asked for it, if any. */
export interface AnnouncedRequest {
  grant: Pick<GrantRow, "id" | "clientId" | "operation" | "target" | "reason" | "mode" | "expiresAt" | "createdAt">;
  operation?: Pick<OperationRow, "id" | "presentationTitle" | "presentationSummary" | "arguments"> & { native?: boolean };
}

export interface AnnouncerOptions {
  hooks: readonly ApprovalWebhook[];
  logger: Logger;
  /** Attempts per delivery, the first included. */
  attempts?: number;
  /** The wait before the second attempt, doubling after each failure. */
  firstRetryMs?: number;
  timeoutMs?: number;
}

export class ApprovalAnnouncer {
  private readonly stopping = new AbortController();
  private readonly deliveries = new Set<Promise<void>>();

  constructor(private readonly options: AnnouncerOptions) {}

  /** Announces a new pending request to every hook; returns at once. */
  announce(request: AnnouncedRequest): void {
    for (const hook of this.options.hooks) {
      const delivery = this.deliver(hook, request).finally(() => this.deliveries.delete(delivery));
      this.deliveries.add(delivery);
    }
  }

  /** Stops retrying; resolves once the deliveries under way have ended. */
  async close(): Promise<void> {
    this.stopping.abort();
    await Promise.allSettled(this.deliveries);
  }

  private async deliver(hook: ApprovalWebhook, request: AnnouncedRequest): Promise<void> {
    const { logger, attempts = 6, firstRetryMs = 1000, timeoutMs = 10_000 } = this.options;
    const body = JSON.stringify(hook.format === "slack" ? slackMessage(request) : requestEvent(request));
    const delivery = randomUUID();
    const headers: Record<string, string> = { "content-type": "application/json", "user-agent": "axon-approval-webhook", "x-axon-delivery": delivery };
    if (hook.format === "json") headers["x-axon-event"] = "request.created";
    if (hook.secret) headers["x-axon-signature-256"] = `sha256=${createHmac("sha256", hook.secret).update(body).digest("hex")}`;
    const { signal } = this.stopping;
    for (let attempt = 1, waitMs = firstRetryMs; ; attempt++, waitMs *= 2) {
      let status: number | undefined;
      try {
        const response = await fetch(hook.url, { method: "POST", headers, body, signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]) });
        await response.body?.cancel();
        status = response.status;
        if (response.ok) {
          logger.info({ webhook: hook.name, request_id: request.grant.id, delivery, attempt }, "approval webhook delivered");
          return;
        }
      } catch {
        // Unreachable, reset or timed out: tried again like a server error.
      }
      // A receiver that refuses the request itself (other than for being busy) will refuse it again.
      const final = status !== undefined && status >= 400 && status < 500 && status !== 408 && status !== 429;
      if (final || attempt >= attempts || signal.aborted) {
        logger.warn({ webhook: hook.name, request_id: request.grant.id, delivery, attempt, status: status ?? null, category: "unavailable" }, "approval webhook not delivered");
        return;
      }
      if (await delay(waitMs, false, { signal }).catch(() => true)) return;
    }
  }
}

/** The generic body: the request as an operator sees it, and what its held call asks for. */
function requestEvent({ grant, operation }: AnnouncedRequest) {
  return {
    type: "request.created",
    request: {
      id: grant.id,
      client_id: grant.clientId,
      operation: grant.operation,
      target: grant.target,
      reason: grant.reason,
      mode: grant.mode,
      created_at: grant.createdAt.toISOString(),
      expires_at: grant.expiresAt?.toISOString() ?? null,
    },
    ...(operation
      ? {
          operation: {
            id: operation.id,
            presentation: { title: operation.presentationTitle, summary: operation.presentationSummary },
            // A native call's detail is what the operator decides on (ref updates, a tool's arguments) and holds no
            // secret; an agent's own operation shows only its transcript-safe presentation.
            ...(operation.native ? { detail: operation.arguments } : {}),
          },
        }
      : {}),
  };
}

function slackMessage({ grant, operation }: AnnouncedRequest) {
  const what = operation ? operation.presentationTitle : grant.reason;
  const expires = grant.expiresAt ? `, expires ${grant.expiresAt.toISOString()}` : "";
  return {
    text: `Axon: ${grant.clientId} asks for ${grant.operation}: ${what}\nRequest ${grant.id}${expires}. Decide with \`axon operator approve ${grant.id}\` or \`axon operator deny ${grant.id}\`.`,
  };
}

/** A broken webhooks file: the server does not start with it. */
export class ApprovalWebhooksFileError extends Error {
  override readonly name = "ApprovalWebhooksFileError";
  constructor(file: string, key: string, reason: string) {
    super(`approval webhooks file ${file}${key === "" ? "" : ` at ${key}`}: ${reason}`);
  }
}

const FIELDS = new Set(["url", "url_env", "format", "secret_env"]);

/**
 * Reads `AXON_APPROVAL_WEBHOOKS_FILE` (HOCON or JSON): `{ "<name>": { url | url_env, format: slack | json,
 * secret_env? } }`. No file: no webhooks. Secrets are read from the environment at start.
 */
export async function loadApprovalWebhooks(file: string | undefined, env: NodeJS.ProcessEnv, options: { projectRoot?: string } = {}): Promise<ApprovalWebhook[]> {
  if (file === undefined || file === "") return [];
  const absoluteFile = path.resolve(file);
  let value: Record<string, JsonValue>;
  try {
    ({ value } = await parseHoconFile(absoluteFile, options.projectRoot === undefined ? {} : { projectRoot: options.projectRoot }));
  } catch (error) {
    if (error instanceof HoconError) throw new ApprovalWebhooksFileError(absoluteFile, "", error.reason);
    throw error;
  }
  return Object.entries(value).map(([name, entry]) => {
    const fail = (key: string, reason: string): never => {
      throw new ApprovalWebhooksFileError(absoluteFile, key === "" ? name : `${name}.${key}`, reason);
    };
    if (entry === null || typeof entry !== "object" || Array.isArray(entry)) return fail("", "must be an object");
    for (const key of Object.keys(entry)) if (!FIELDS.has(key)) fail(key, `unknown field (expected ${[...FIELDS].join(", ")})`);
    const fromEnv = (key: string): string | undefined => {
      const variable = entry[key];
      if (variable === undefined) return undefined;
      if (typeof variable !== "string") return fail(key, "must name an environment variable");
      return env[variable] || fail(key, `the environment variable ${variable} is not set`);
    };
    const url = typeof entry.url === "string" ? entry.url : fromEnv("url_env");
    if (url === undefined || (entry.url !== undefined && entry.url_env !== undefined)) return fail("url", "give exactly one of url and url_env");
    if (!/^https?:\/\//.test(url) || !URL.canParse(url)) return fail(entry.url === undefined ? "url_env" : "url", "must be an http or https URL");
    const format = entry.format ?? "json";
    if (format !== "slack" && format !== "json") return fail("format", "must be slack or json");
    const secret = fromEnv("secret_env");
    if (format === "slack" && secret !== undefined) fail("secret_env", "Slack's incoming webhooks are not signed: its URL is the secret");
    return { name, url, format, ...(secret ? { secret } : {}) };
  });
}
