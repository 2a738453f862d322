import path from "node:path";

import { HoconError, parseHoconFile } from "../agents/hocon.js";
import { AxonError, type QuotaViolation, Code } from "../errors.js";
import { isJsonObject } from "../json.js";

/**
 * Admission (spec §5): whether a new submission may enter the lifecycle at all. The store counts, `admit` decides;
 * it is a pure function of the limits, the counts and the clock the caller passes in, so replicas sharing a database
 * agree as long as they count from the same rows.
 */

/** The limits one client is held to; any of them can be overridden per client. */
export interface ClientLimits {
  /** Submissions per fixed window (windows start at multiples of `windowSeconds` since the epoch). */
  requestsPerWindow: number;
  windowSeconds: number;
  /** Non-terminal operations. */
  clientActive: number;
  /** Approvals awaiting an operator. */
  clientPending: number;
}

export interface GlobalLimits {
  globalActive: number;
  globalExecuting: number;
}

/** What chat completions on `/v1` are held to, per client; any of them can be overridden per client too. */
export interface InferenceLimits {
  /** Chat completions per window (the same `windowSeconds`), counted by each replica in memory. */
  inferenceRequestsPerWindow: number;
  /** Chat completions answering at once, counted by each replica in memory. */
  inferenceInFlight: number;
  /** Tokens per UTC day, counted in the database across replicas; Infinity = no budget. */
  inferenceTokensPerDay: number;
}

export interface AdmissionLimits extends ClientLimits, GlobalLimits, InferenceLimits {
  clients: Record<string, Partial<ClientLimits & InferenceLimits>>;
}

export const defaultAdmissionLimits: AdmissionLimits = {
  requestsPerWindow: 60,
  windowSeconds: 60,
  clientActive: 25,
  clientPending: 10,
  globalActive: 512,
  globalExecuting: 64,
  inferenceRequestsPerWindow: 600,
  inferenceInFlight: 16,
  inferenceTokensPerDay: Number.POSITIVE_INFINITY,
  clients: {},
};

/** What the store counted just before the decision. */
export interface AdmissionCounts {
  /** Submissions this client made since the window start (replays and refusals never count: they create nothing). */
  clientRequestsInWindow: number;
  clientActive: number;
  clientPending: number;
  globalActive: number;
  globalExecuting: number;
}

export type AdmissionRefusalReason =
  | "CLIENT_RATE_LIMIT"
  | "CLIENT_OPERATION_LIMIT"
  | "CLIENT_PENDING_LIMIT"
  | "GLOBAL_OPERATION_LIMIT"
  | "GLOBAL_EXECUTING_LIMIT";

export interface AdmissionRefusal {
  admitted: false;
  reason: AdmissionRefusalReason;
  /** Seconds to the window's end for the rate, 2 for every capacity limit. */
  retryAfterSeconds: number;
  limit: number;
  used: number;
  /** Who the limit belongs to: the client's own quota or the server's. */
  scope: "client" | "global";
  clientId: string;
  /** The rate limit's window, for the QuotaFailure description. */
  windowSeconds?: number;
}

export type Admission = { admitted: true } | AdmissionRefusal;

/** Capacity frees up when some operation finishes; there is no window to wait for. */
export const CAPACITY_RETRY_AFTER_SECONDS = 2;

/** The client's effective limits: its overrides over the file's defaults. */
export function limitsFor(limits: AdmissionLimits, clientId: string): ClientLimits & GlobalLimits {
  const overrides = Object.hasOwn(limits.clients, clientId) ? limits.clients[clientId] : undefined;
  return {
    requestsPerWindow: overrides?.requestsPerWindow ?? limits.requestsPerWindow,
    windowSeconds: overrides?.windowSeconds ?? limits.windowSeconds,
    clientActive: overrides?.clientActive ?? limits.clientActive,
    clientPending: overrides?.clientPending ?? limits.clientPending,
    globalActive: limits.globalActive,
    globalExecuting: limits.globalExecuting,
  };
}

/** The client's effective limits on `/v1`, with the window its rate is counted in. */
export function inferenceLimitsFor(limits: AdmissionLimits, clientId: string): InferenceLimits & { windowSeconds: number } {
  const overrides = Object.hasOwn(limits.clients, clientId) ? limits.clients[clientId] : undefined;
  return {
    inferenceRequestsPerWindow: overrides?.inferenceRequestsPerWindow ?? limits.inferenceRequestsPerWindow,
    inferenceInFlight: overrides?.inferenceInFlight ?? limits.inferenceInFlight,
    inferenceTokensPerDay: overrides?.inferenceTokensPerDay ?? limits.inferenceTokensPerDay,
    windowSeconds: overrides?.windowSeconds ?? limits.windowSeconds,
  };
}

/** The start of the fixed window `now` falls in. Use the client's own `windowSeconds` (see limitsFor). */
export function windowStartOf(now: Date, windowSeconds: number): Date {
  const windowMs = windowSeconds * 1000;
  return new Date(Math.floor(now.getTime() / windowMs) * windowMs);
}

/**
 * Checks in the spec's order, first refusal wins: client rate, client active, client pending, global active, global
 * executing. A limit is reached when the count already equals it (admitting would exceed it); a limit of 0 refuses all.
 */
export function admit(
  limits: AdmissionLimits,
  clientId: string,
  counts: AdmissionCounts,
  now: Date,
  windowStart: Date,
): Admission {
  const effective = limitsFor(limits, clientId);
  const refuse = (
    reason: AdmissionRefusalReason,
    limit: number,
    used: number,
    scope: "client" | "global",
    retryAfterSeconds = CAPACITY_RETRY_AFTER_SECONDS,
  ): AdmissionRefusal => ({ admitted: false, reason, retryAfterSeconds, limit, used, scope, clientId });

  if (counts.clientRequestsInWindow >= effective.requestsPerWindow) {
    const windowEndMs = windowStart.getTime() + effective.windowSeconds * 1000;
    const retryAfterSeconds = Math.max(1, Math.ceil((windowEndMs - now.getTime()) / 1000));
    return {
      ...refuse("CLIENT_RATE_LIMIT", effective.requestsPerWindow, counts.clientRequestsInWindow, "client", retryAfterSeconds),
      windowSeconds: effective.windowSeconds,
    };
  }
  if (counts.clientActive >= effective.clientActive) {
    return refuse("CLIENT_OPERATION_LIMIT", effective.clientActive, counts.clientActive, "client");
  }
  if (counts.clientPending >= effective.clientPending) {
    return refuse("CLIENT_PENDING_LIMIT", effective.clientPending, counts.clientPending, "client");
  }
  if (counts.globalActive >= effective.globalActive) {
    return refuse("GLOBAL_OPERATION_LIMIT", effective.globalActive, counts.globalActive, "global");
  }
  if (counts.globalExecuting >= effective.globalExecuting) {
    return refuse("GLOBAL_EXECUTING_LIMIT", effective.globalExecuting, counts.globalExecuting, "global");
  }
  return { admitted: true };
}

// ---------------------------------------------------------------------------------------------------------------
// The error a refusal becomes

export type { QuotaViolation };

/**
 * RESOURCE_EXHAUSTED, category rate_limited. `retryAfterSeconds` feeds both the `Retry-After` header and
 * google.rpc.RetryInfo; `quotaViolations` is google.rpc.QuotaFailure's list.
 */
export type AdmissionError = AxonError & { retryAfterSeconds: number; quotaViolations: QuotaViolation[] };

const messages: Record<AdmissionRefusalReason, string> = {
  CLIENT_RATE_LIMIT: "too many submissions in this window",
  CLIENT_OPERATION_LIMIT: "too many active operations for this client",
  CLIENT_PENDING_LIMIT: "too many operations awaiting approval for this client",
  GLOBAL_OPERATION_LIMIT: "the server has too many active operations",
  GLOBAL_EXECUTING_LIMIT: "the server has too many executing operations",
};

/**
 * ErrorInfo metadata: `category`, `limit`, `retry_after_seconds`, `scope`, plus `used` for the client's own quotas
 * (a client learns nothing about other clients' load) and `window_seconds` for the rate.
 */
export function admissionError(refusal: AdmissionRefusal): AdmissionError {
  const metadata: Record<string, string> = {
    category: "rate_limited",
    limit: String(refusal.limit),
    retry_after_seconds: String(refusal.retryAfterSeconds),
    scope: refusal.scope,
  };
  if (refusal.scope === "client") metadata.used = String(refusal.used);
  if (refusal.windowSeconds !== undefined) metadata.window_seconds = String(refusal.windowSeconds);

  const violation: QuotaViolation = {
    subject: refusal.scope === "client" ? `client:${refusal.clientId}` : "global",
    description: quotaDescription(refusal),
  };
  return new AxonError(Code.ResourceExhausted, refusal.reason, messages[refusal.reason], {
    metadata,
    retryAfterSeconds: refusal.retryAfterSeconds,
    quotaViolations: [violation],
  }) as AdmissionError;
}

function quotaDescription(refusal: AdmissionRefusal): string {
  switch (refusal.reason) {
    case "CLIENT_RATE_LIMIT":
      return `at most ${refusal.limit} submissions per ${refusal.windowSeconds ?? "?"} seconds`;
    case "CLIENT_OPERATION_LIMIT":
      return `at most ${refusal.limit} active operations per client`;
    case "CLIENT_PENDING_LIMIT":
      return `at most ${refusal.limit} operations awaiting approval per client`;
    case "GLOBAL_OPERATION_LIMIT":
      return `at most ${refusal.limit} active operations on the server`;
    case "GLOBAL_EXECUTING_LIMIT":
      return `at most ${refusal.limit} executing operations on the server`;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Loading

export class AdmissionFileError extends Error {
  override readonly name = "AdmissionFileError";
  constructor(
    readonly file: string,
    readonly key: string | undefined,
    readonly reason: string,
    options: { cause?: unknown } = {},
  ) {
    super(`admission file ${file}${key === undefined ? "" : ` at ${key}`}: ${reason}`, options);
  }
}

const CLIENT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const INT32_MAX = 2_147_483_647;

const clientKeys = {
  requests_per_window: "requestsPerWindow",
  window_seconds: "windowSeconds",
  client_active: "clientActive",
  client_pending: "clientPending",
  inference_requests_per_window: "inferenceRequestsPerWindow",
  inference_in_flight: "inferenceInFlight",
  inference_tokens_per_day: "inferenceTokensPerDay",
} as const;
const globalKeys = { global_active: "globalActive", global_executing: "globalExecuting" } as const;

/** No file: the defaults. A file (JSON; HOCON is accepted too, being a superset) overrides any subset of them. */
export async function loadAdmissionLimits(file?: string, options: { projectRoot?: string } = {}): Promise<AdmissionLimits> {
  if (file === undefined || file === "") return defaultAdmissionLimits;
  const absoluteFile = path.resolve(file);
  let parsed;
  try {
    parsed = await parseHoconFile(absoluteFile, options.projectRoot === undefined ? {} : { projectRoot: options.projectRoot });
  } catch (error) {
    if (error instanceof HoconError) throw new AdmissionFileError(absoluteFile, undefined, error.message, { cause: error });
    throw error;
  }
  return parseAdmissionLimits(parsed.value, absoluteFile);
}

export function parseAdmissionLimits(document: unknown, file: string): AdmissionLimits {
  const fail = (key: string | undefined, reason: string): never => {
    throw new AdmissionFileError(file, key, reason);
  };
  if (!isJsonObject(document)) return fail(undefined, "the top level must be an object");

  const limits: AdmissionLimits = { ...defaultAdmissionLimits, clients: {} };
  for (const [key, value] of Object.entries(document)) {
    if (key === "clients") continue;
    if (Object.hasOwn(clientKeys, key)) limits[clientKeys[key as keyof typeof clientKeys]] = limit(value, key, fail);
    else if (Object.hasOwn(globalKeys, key)) limits[globalKeys[key as keyof typeof globalKeys]] = limit(value, key, fail);
    else fail(key, `is not a known key (known: ${[...Object.keys(clientKeys), ...Object.keys(globalKeys), "clients"].join(", ")})`);
  }

  const clients = document.clients;
  if (clients !== undefined) {
    if (!isJsonObject(clients)) return fail("clients", "must be an object of client names");
    for (const [name, raw] of Object.entries(clients)) {
      const key = `clients.${name}`;
      if (!CLIENT_NAME.test(name)) fail(key, "is not a client name (letters, digits, dot, underscore, dash; up to 64)");
      if (!isJsonObject(raw)) return fail(key, "must be an object of limits");
      const overrides: Partial<ClientLimits & InferenceLimits> = {};
      for (const [field, value] of Object.entries(raw)) {
        if (Object.hasOwn(clientKeys, field)) overrides[clientKeys[field as keyof typeof clientKeys]] = limit(value, `${key}.${field}`, fail);
        else if (Object.hasOwn(globalKeys, field)) fail(`${key}.${field}`, "is a global limit and cannot be set per client");
        else fail(`${key}.${field}`, `is not a known key (known: ${Object.keys(clientKeys).join(", ")})`);
      }
      limits.clients[name] = overrides;
    }
  }
  return limits;
}

function limit(value: unknown, key: string, fail: (key: string, reason: string) => never): number {
  const smallest = key.endsWith("window_seconds") ? 1 : 0;
  if (typeof value !== "number" || !Number.isInteger(value) || value < smallest || value > INT32_MAX) {
    return fail(key, `must be a whole number from ${smallest} to ${INT32_MAX}`);
  }
  return value;
}

