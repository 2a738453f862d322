import { createHmac, timingSafeEqual } from "node:crypto";
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import type { Logger } from "../logger.js";
import type { AuditEntry } from "../operations/audit-batch.js";
import { isJsonObject } from "../json.js";
import type { HttpRequest, HttpResponse } from "../server/listener.js";
import type { GitHosts } from "./hosts.js";
import type { UpstreamCredentials } from "./upstream-credentials.js";

export const GITHUB_WEBHOOK_PATH = "/webhooks/github";

export interface WebhookOptions {
  hosts: GitHosts;
  credentials: UpstreamCredentials;
  logger: Logger;
  /** Where each delivery's audit record goes. */
  audit(entry: AuditEntry): void;
}

/** GitHub sends at most 25 MB; the events Axon acts on are a few KiB. */
const MAX_DELIVERY_BYTES = 1024 * 1024;
/** Events after which an installation's tokens may no longer be what GitHub allows: they are minted afresh. */
const REVOKING_EVENTS = new Set(["installation", "installation_repositories", "installation_target"]);

/**
 * `POST /webhooks/github`: deliveries of the GitHub Apps of AXON_GIT_HOSTS_FILE, each verified by its
 * `X-Hub-Signature-256` (HMAC-SHA256 of the body with the App's webhook secret, compared in constant time) before
 * its body is read as JSON. An installation deleted, suspended or changed drops its cached tokens. Every delivery,
 * accepted or not, is audited (a record and a log line); a bad signature is 401 and changes nothing.
 */
export async function receiveGitHubWebhook(req: HttpRequest, res: HttpResponse, options: WebhookOptions): Promise<void> {
  const { hosts, credentials, logger } = options;
  const delivery = header(req, "x-github-delivery")?.slice(0, 100);
  const event = header(req, "x-github-event")?.slice(0, 100);
  const audit = (outcome: string, fields: Record<string, JsonValue | undefined> = {}) => {
    const detail = Object.fromEntries(Object.entries({ delivery, event, outcome, ...fields }).filter(([, value]) => value !== undefined)) as JsonObject;
    options.audit({ actor: "github", actorKind: "system", action: "github.webhook", category: outcome === "accepted" ? null : "rejected", detail });
    logger.info({ category: "audit", action: "github.webhook", ...detail }, "GitHub webhook delivery");
  };
  if (req.method !== "POST") {
    return answer(res, 405, "deliveries are POSTed", { allow: "POST" });
  }
  const apps = hosts.all().flatMap((host) => {
    const secret = host.credential.kind === "github_app" ? hosts.secret(host.credential.webhookSecretEnv) : undefined;
    return secret === undefined ? [] : [{ host: host.name, secret }];
  });
  if (apps.length === 0) {
    audit("no_webhook_configured");
    return answer(res, 404, "no GitHub App webhook is configured (webhook_secret_env)", req.complete ? {} : { connection: "close" });
  }
  const body = await readBounded(req);
  if (body === undefined) {
    audit("too_large");
    return answer(res, 413, `a delivery is at most ${MAX_DELIVERY_BYTES} bytes`, { connection: "close" });
  }
  const signature = /^sha256=([0-9a-f]{64})$/i.exec(header(req, "x-hub-signature-256") ?? "")?.[1];
  const presented = signature === undefined ? undefined : Buffer.from(signature.toLowerCase(), "hex");
  // Every configured secret is tried, each in constant time: which App a delivery is for is only learnt from a match.
  const matches = apps.filter(({ secret }) => presented !== undefined && timingSafeEqual(createHmac("sha256", secret).update(body).digest(), presented));
  if (matches.length === 0) {
    audit("bad_signature");
    return answer(res, 401, "the X-Hub-Signature-256 of this delivery does not match");
  }
  let payload: unknown;
  try {
    payload = JSON.parse(body.toString("utf8"));
  } catch {
    audit("malformed", { hosts: matches.map((match) => match.host) });
    return answer(res, 400, "a delivery is a JSON document");
  }
  const action = isJsonObject(payload) && typeof payload.action === "string" ? payload.action.slice(0, 100) : undefined;
  const installation = isJsonObject(payload) && isJsonObject(payload.installation) && typeof payload.installation.id === "number" ? payload.installation.id : undefined;
  let dropped = 0;
  if (event !== undefined && REVOKING_EVENTS.has(event) && action !== "created" && installation !== undefined) {
    for (const { host } of matches) dropped += credentials.app(host)?.forgetInstallation(installation) ?? 0;
  }
  audit("accepted", { hosts: matches.map((match) => match.host), github_action: action, installation, tokens_dropped: dropped });
  answer(res, 200, "accepted");
}

function answer(res: HttpResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify({ message }));
}

function header(req: HttpRequest, name: string): string | undefined {
  const value = req.headers[name];
  return typeof value === "string" ? value : undefined;
}

async function readBounded(req: HttpRequest): Promise<Buffer | undefined> {
  const declared = Number(header(req, "content-length") ?? "0");
  if (declared > MAX_DELIVERY_BYTES) return undefined;
  const pieces: Buffer[] = [];
  let size = 0;
  for await (const piece of req as AsyncIterable<Buffer>) {
    size += piece.length;
    if (size > MAX_DELIVERY_BYTES) return undefined;
    pieces.push(piece);
  }
  return Buffer.concat(pieces, size);
}
