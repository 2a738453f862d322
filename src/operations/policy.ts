import path from "node:path";

import { HoconError, parseHoconFile } from "../agents/hocon.js";
import { AxonError, Code, type FieldViolation } from "../errors.js";
import { semanticallyEqual } from "./canonical-json.js";
import { isJsonObject } from "../json.js";

/**
 * The authorization policy (spec §3): which client may run which operation on which target, and on what terms a
 * request for approval is granted. Loading validates the file once; `decide` is a pure function of the policy, the
 * submission and the client's active window grants, so every branch is testable without a store or a clock.
 */

export type PolicyEffect = "allow" | "request" | "deny";
export type GrantMode = "window" | "execution";

/** The terms a request rule offers, with the file's defaults filled in. */
export interface GrantPolicy {
  mode: GrantMode;
  /** Window grants only: the minutes asked for when nobody says otherwise, and the most anybody may ask for. */
  defaultMinutes?: number;
  maxMinutes?: number;
  defaultMaxUses: number;
  maxUses: number;
}

/**
 * Every field must match the operation's target field: strings as `*` globs, a list of strings as globs every element
 * of the target's list must match one of (`refs: ["refs/heads/agent/*"]`), anything else by JSON equality.
 */
export type TargetPattern = Readonly<Record<string, unknown>>;

export interface PolicyRule {
  id: string;
  effect: PolicyEffect;
  /** `*` globs over client names; absent = every client. */
  clients?: string[];
  /** `*` globs over operation types (`agent.chat`, `http.*`, `*`). */
  operations: string[];
  /** Alternatives: the rule applies when any one pattern matches. Absent = every target. */
  targets?: TargetPattern[];
  /** Present on every request rule (defaulted to one-use execution grants), never on the others. */
  grantPolicy?: GrantPolicy;
  /** The most of each attribute (`body_bytes`, `max_tokens`) a call may carry for the rule to apply to it. */
  limits?: Readonly<Record<string, number>>;
}

export interface Policy {
  /** The absolute file it came from; undefined for the built-in default. */
  source?: string;
  /** The file and everything it included: what a reload watches. */
  files: string[];
  rules: PolicyRule[];
}

/** A window grant as the policy needs to see it; the store's grant row can be passed as is. */
export interface GrantView {
  id: string;
  clientId: string;
  operation: string;
  /** The exact target the grant was approved for. */
  target: unknown;
  /** When given, only `window` counts: an execution grant belongs to its one operation. */
  mode?: GrantMode | string;
  /** When given, only `active` counts. */
  status?: string;
  /** When given, 0 means used up. */
  usesRemaining?: number | null;
  /** When given together with `now` in the input, a grant at or past its expiry does not count. */
  expiresAt?: Date | null;
}

export interface DecisionInput {
  clientId: string;
  operation: string;
  target: unknown;
  /** Lets `decide` drop grants that expired between the caller's query and now. */
  now?: Date;
  /** What rules' `limits` bound; a rule with a limit applies only to a call that carries the attribute within it. */
  attributes?: Readonly<Record<string, number>>;
}

/** What a request rule offers the approval it creates: the defaults (`minutes`, `maxUses`) and the ceilings. */
export interface DecisionGrantPolicy {
  mode: GrantMode;
  minutes?: number;
  maxUses?: number;
  maxMinutes?: number;
  maxAllowedUses?: number;
}

export type Decision =
  | { effect: "deny"; ruleId?: string }
  | { effect: "allow"; ruleId: string }
  | { effect: "use_grant"; grantId: string }
  | { effect: "request"; ruleId: string; grantPolicy: DecisionGrantPolicy };

/** The largest value a 32-bit counter (`minutes`, `max_uses`) can carry. */
const INT32_MAX = 2_147_483_647;

const EXECUTION_GRANT: GrantPolicy = { mode: "execution", defaultMaxUses: 1, maxUses: 1 };
const DEFAULT_WINDOW_MINUTES = 60;
const DEFAULT_WINDOW_USES = 100;
/** A held native call is approved for itself alone, unless the agent asked ahead for a window of more uses. */
const NATIVE_APPROVAL: GrantPolicy = { mode: "window", defaultMinutes: 60, maxMinutes: 24 * 60, defaultMaxUses: 1, maxUses: DEFAULT_WINDOW_USES };

/**
 * Used when no policy file is configured: chat, fetches and models are open; the credential broker, every Git write
 * and every tool call a network holds for a human ask an operator; the rest is denied.
 */
export const defaultPolicy: Policy = {
  files: [],
  rules: [
    { id: "builtin-agent-chat", effect: "allow", operations: ["agent.chat"] },
    { id: "builtin-http-request", effect: "request", operations: ["http.request"], grantPolicy: EXECUTION_GRANT },
    { id: "builtin-git-read", effect: "allow", operations: ["git.fetch", "git.lfs.read"] },
    { id: "builtin-git-write", effect: "request", operations: ["git.push.*", "git.ref.delete", "git.tag.*", "git.lfs.write"], grantPolicy: NATIVE_APPROVAL },
    { id: "builtin-inference", effect: "allow", operations: ["inference.*"] },
    { id: "builtin-tool-call", effect: "request", operations: ["agent.tool_call"], grantPolicy: EXECUTION_GRANT },
  ],
};

// ---------------------------------------------------------------------------------------------------------------
// The decision

/**
 * Order (spec §3): deny > matching active window grant > allow > request > no match = deny. Among rules of one effect
 * the first in file order wins; among matching grants the one expiring soonest is used first (then the smallest id),
 * so the most perishable use goes before a longer-lived one.
 *
 * A window grant matches when it belongs to the client, names the same operation, and was approved for a target
 * semantically equal to this one (canonical JSON), a list in it covering any of its own elements (`grantCovers`). Grant
 * targets are exact, never globs: an operator approves the target they were shown, and a `*` an agent wrote into it
 * is just a character.
 */
export function decide(policy: Policy, input: DecisionInput, activeWindowGrants: readonly GrantView[]): Decision {
  const applicable = policy.rules.filter((rule) => ruleApplies(rule, input));

  const deny = applicable.find((rule) => rule.effect === "deny");
  if (deny) return { effect: "deny", ruleId: deny.id };

  const grant = activeWindowGrants
    .filter((candidate) => windowGrantMatches(candidate, input))
    .sort(bySoonestExpiry)[0];
  if (grant) return { effect: "use_grant", grantId: grant.id };

  const allow = applicable.find((rule) => rule.effect === "allow");
  if (allow) return { effect: "allow", ruleId: allow.id };

  const request = applicable.find((rule) => rule.effect === "request");
  if (request) return { effect: "request", ruleId: request.id, grantPolicy: decisionGrantPolicy(request.grantPolicy ?? EXECUTION_GRANT) };

  return { effect: "deny" };
}

/**
 * The registered operation types a client may submit at all (for the descriptor and the MCP tool list): some allow or
 * request rule names it for this client, and no deny rule refuses it for every target.
 */
export function operationsAvailableTo(policy: Policy, clientId: string, registeredOperations: readonly string[]): string[] {
  return registeredOperations.filter((operation) => {
    const rules = policy.rules.filter((rule) => clientMatches(rule, clientId) && rule.operations.some((glob) => globMatches(glob, operation)));
    if (rules.some((rule) => rule.effect === "deny" && rule.targets === undefined)) return false;
    return rules.some((rule) => rule.effect !== "deny");
  });
}

function ruleApplies(rule: PolicyRule, input: DecisionInput): boolean {
  return (
    clientMatches(rule, input.clientId) &&
    rule.operations.some((glob) => globMatches(glob, input.operation)) &&
    (rule.targets === undefined || rule.targets.some((pattern) => targetMatches(pattern, input.target))) &&
    (rule.limits === undefined || withinLimits(rule.limits, input.attributes ?? {}))
  );
}

/** A limit the call does not carry the attribute for is not met: a bound is never assumed to hold. */
function withinLimits(limits: Readonly<Record<string, number>>, attributes: Readonly<Record<string, number>>): boolean {
  return Object.entries(limits).every(([name, most]) => {
    const value = attributes[name];
    return value !== undefined && value <= most;
  });
}

function clientMatches(rule: PolicyRule, clientId: string): boolean {
  return rule.clients === undefined || rule.clients.some((glob) => globMatches(glob, clientId));
}

/** Every field of the pattern must be present in the target and match it; fields the pattern omits are free. */
export function targetMatches(pattern: TargetPattern, target: unknown): boolean {
  if (!isJsonObject(target)) return false;
  return Object.entries(pattern).every(([field, expected]) => {
    if (!Object.hasOwn(target, field)) return false;
    const actual = target[field];
    if (typeof expected === "string") return typeof actual === "string" && globMatches(expected, actual);
    if (isStringList(expected)) return isStringList(actual) && actual.every((item) => expected.some((glob) => globMatches(glob, item)));
    return semanticallyEqual(expected, actual);
  });
}

function isStringList(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === "string");
}

/**
 * A grant approved for `granted` covers a call on `target`: the same fields, equal, except that a list of strings
 * in the grant covers any call whose list holds only its elements (a push of some of the refs it was approved for).
 */
export function grantCovers(granted: unknown, target: unknown): boolean {
  if (!isJsonObject(granted) || !isJsonObject(target)) return semanticallyEqual(granted, target);
  const fields = Object.keys(granted);
  if (fields.length !== Object.keys(target).length) return false;
  return fields.every((field) => {
    if (!Object.hasOwn(target, field)) return false;
    const allowed = granted[field];
    const actual = target[field];
    if (isStringList(allowed) && isStringList(actual)) return actual.every((item) => allowed.includes(item));
    return semanticallyEqual(allowed, actual);
  });
}

/**
 * `*` matches any run of characters (`/` and `.` included, the empty run too); every other character matches itself.
 * There is no escape: a pattern cannot require a literal `*`. Two-pointer matching (at worst pattern length x text
 * length steps), no regular expressions, so a hostile 16 KiB target cannot make it backtrack exponentially.
 */
export function globMatches(pattern: string, text: string): boolean {
  let p = 0;
  let t = 0;
  let starAt = -1;
  let resumeAt = 0;
  while (t < text.length) {
    if (p < pattern.length && pattern[p] !== "*" && pattern[p] === text[t]) {
      p++;
      t++;
    } else if (p < pattern.length && pattern[p] === "*") {
      starAt = p++;
      resumeAt = t;
    } else if (starAt >= 0) {
      p = starAt + 1;
      t = ++resumeAt;
    } else {
      return false;
    }
  }
  while (p < pattern.length && pattern[p] === "*") p++;
  return p === pattern.length;
}

function windowGrantMatches(grant: GrantView, input: DecisionInput): boolean {
  if (grant.clientId !== input.clientId || grant.operation !== input.operation) return false;
  if (grant.mode !== undefined && grant.mode !== "window") return false;
  if (grant.status !== undefined && grant.status !== "active") return false;
  if (grant.usesRemaining !== undefined && grant.usesRemaining !== null && grant.usesRemaining <= 0) return false;
  if (input.now && grant.expiresAt && grant.expiresAt.getTime() <= input.now.getTime()) return false;
  return grantCovers(grant.target, input.target);
}

function bySoonestExpiry(left: GrantView, right: GrantView): number {
  const leftExpiry = left.expiresAt?.getTime() ?? Number.POSITIVE_INFINITY;
  const rightExpiry = right.expiresAt?.getTime() ?? Number.POSITIVE_INFINITY;
  if (leftExpiry !== rightExpiry) return leftExpiry < rightExpiry ? -1 : 1;
  return left.id < right.id ? -1 : left.id > right.id ? 1 : 0;
}

function decisionGrantPolicy(grantPolicy: GrantPolicy): DecisionGrantPolicy {
  return {
    mode: grantPolicy.mode,
    ...(grantPolicy.defaultMinutes === undefined ? {} : { minutes: grantPolicy.defaultMinutes }),
    maxUses: grantPolicy.defaultMaxUses,
    ...(grantPolicy.maxMinutes === undefined ? {} : { maxMinutes: grantPolicy.maxMinutes }),
    maxAllowedUses: grantPolicy.maxUses,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Grant terms: what a pending approval asks for, and what an operator's decision may turn it into

/** The terms of one grant. A grant without `minutes` is an execution grant: it never matches another operation. */
export interface GrantTerms {
  mode: GrantMode;
  minutes?: number;
  maxUses: number;
}

/** `minutes` and `max_uses` as an operator decision or an explicit grant request carries them. */
export interface GrantTermsInput {
  minutes?: number | null;
  max_uses?: number | null;
}

/**
 * The terms a new pending approval asks for: the rule's defaults, or (explicit grant requests) what the agent asked
 * for, provided it stays within the rule's ceilings. Execution grants take no `minutes` and exactly one use.
 */
export function requestedGrantTerms(grantPolicy: DecisionGrantPolicy, asked: GrantTermsInput = {}): GrantTerms {
  const violations: FieldViolation[] = [];
  const minutes = counter(asked.minutes, "minutes", violations);
  const maxUses = counter(asked.max_uses, "max_uses", violations);
  const mostUses = grantPolicy.maxAllowedUses ?? grantPolicy.maxUses ?? 1;

  if (grantPolicy.mode === "execution" || grantPolicy.minutes === undefined) {
    if (minutes !== undefined) violations.push({ field: "minutes", description: "this operation is approved one execution at a time and takes no minutes" });
    if (maxUses !== undefined && maxUses !== 1) violations.push({ field: "max_uses", description: "an execution grant has exactly one use" });
    throwIfAny(violations, "INVALID_GRANT_TERMS", "the grant terms exceed what the policy allows");
    return { mode: "execution", maxUses: 1 };
  }

  const mostMinutes = grantPolicy.maxMinutes ?? grantPolicy.minutes;
  if (minutes !== undefined && minutes > mostMinutes) {
    violations.push({ field: "minutes", description: `at most ${mostMinutes} minutes may be asked for` });
  }
  if (maxUses !== undefined && maxUses > mostUses) {
    violations.push({ field: "max_uses", description: `at most ${mostUses} uses may be asked for` });
  }
  throwIfAny(violations, "INVALID_GRANT_TERMS", "the grant terms exceed what the policy allows");
  return { mode: "window", minutes: minutes ?? grantPolicy.minutes, maxUses: maxUses ?? grantPolicy.maxUses ?? mostUses };
}

/**
 * An operator's approval may only narrow what was requested: fewer minutes, fewer uses, never a window for an
 * execution request. Omitted values keep the requested ones. The result is a window grant only if it has minutes
 * (spec §3: an approval with no `minutes` never turns into a window grant).
 */
export function narrowGrant(requested: GrantTerms, decision: GrantTermsInput): GrantTerms {
  const violations: FieldViolation[] = [];
  const minutes = counter(decision.minutes, "minutes", violations);
  const maxUses = counter(decision.max_uses, "max_uses", violations);

  if (minutes !== undefined) {
    if (requested.minutes === undefined) {
      violations.push({ field: "minutes", description: "the request is for one execution and cannot become a window grant" });
    } else if (minutes > requested.minutes) {
      violations.push({ field: "minutes", description: `may only narrow the requested ${requested.minutes} minutes` });
    }
  }
  if (maxUses !== undefined && maxUses > requested.maxUses) {
    violations.push({ field: "max_uses", description: `may only narrow the requested ${requested.maxUses} uses` });
  }
  throwIfAny(violations, "INVALID_GRANT_DECISION", "an approval may only narrow the requested grant");

  const finalMinutes = minutes ?? requested.minutes;
  return finalMinutes === undefined
    ? { mode: "execution", maxUses: maxUses ?? requested.maxUses }
    : { mode: requested.mode, minutes: finalMinutes, maxUses: maxUses ?? requested.maxUses };
}

function counter(value: number | null | undefined, field: string, violations: FieldViolation[]): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Number.isInteger(value) || value < 1 || value > INT32_MAX) {
    violations.push({ field, description: "must be a whole number from 1 to 2147483647" });
    return undefined;
  }
  return value;
}

function throwIfAny(violations: FieldViolation[], reason: string, message: string): void {
  if (violations.length > 0) {
    throw new AxonError(Code.InvalidArgument, reason, message, { metadata: { category: "rejected" }, fieldViolations: violations });
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Loading

/** A policy file that cannot be used; `key` is the path inside the file (`rules[2].effect`) when one is to blame. */
export class PolicyFileError extends Error {
  override readonly name = "PolicyFileError";
  constructor(
    readonly file: string,
    readonly key: string | undefined,
    readonly reason: string,
    options: { cause?: unknown } = {},
  ) {
    super(`policy file ${file}${key === undefined ? "" : ` at ${key}`}: ${reason}`, options);
  }
}

export interface PolicyLoadOptions {
  /** Where `include`s may also be looked up (see parseHoconFile). */
  projectRoot?: string;
}

/** No file (undefined or empty): the built-in default. Otherwise the file (HOCON or JSON), validated in full. */
export async function loadPolicy(file?: string, options: PolicyLoadOptions = {}): Promise<Policy> {
  if (file === undefined || file === "") return defaultPolicy;
  const absoluteFile = path.resolve(file);
  let parsed;
  try {
    parsed = await parseHoconFile(absoluteFile, options.projectRoot === undefined ? {} : { projectRoot: options.projectRoot });
  } catch (error) {
    if (error instanceof HoconError) throw new PolicyFileError(absoluteFile, undefined, error.message, { cause: error });
    throw error;
  }
  return { source: absoluteFile, files: parsed.files, rules: parsePolicy(parsed.value, absoluteFile) };
}

/** Validates an already parsed policy document (exported for callers that hold the JSON already). */
export function parsePolicy(document: unknown, file: string): PolicyRule[] {
  const fail = (key: string | undefined, reason: string): never => {
    throw new PolicyFileError(file, key, reason);
  };
  if (!isJsonObject(document)) return fail(undefined, "the top level must be an object");
  onlyKeys(document, ["rules"], undefined, fail);
  const rules = document.rules;
  if (!Array.isArray(rules)) return fail("rules", "must be a list of rules");

  const seen = new Set<string>();
  return rules.map((raw, index) => {
    const key = `rules[${index}]`;
    if (!isJsonObject(raw)) return fail(key, "must be an object");
    onlyKeys(raw, ["id", "effect", "clients", "operations", "targets", "grant_policy", "limits"], key, fail);

    const id = raw.id;
    if (typeof id !== "string" || id.trim() === "") return fail(`${key}.id`, "must be a non-empty string");
    if (seen.has(id)) return fail(`${key}.id`, `${JSON.stringify(id)} is already the id of an earlier rule`);
    seen.add(id);

    const effect = raw.effect;
    if (effect !== "allow" && effect !== "request" && effect !== "deny") {
      return fail(`${key}.effect`, "must be one of allow, request, deny");
    }

    const rule: PolicyRule = { id, effect, operations: globList(raw.operations, `${key}.operations`, fail) };
    if (raw.clients !== undefined) rule.clients = globList(raw.clients, `${key}.clients`, fail);
    if (raw.targets !== undefined) {
      if (!Array.isArray(raw.targets) || raw.targets.length === 0) {
        return fail(`${key}.targets`, "must be a non-empty list of objects (leave it out to match every target)");
      }
      rule.targets = raw.targets.map((pattern, patternIndex) =>
        isJsonObject(pattern) ? pattern : fail(`${key}.targets[${patternIndex}]`, "must be an object of target fields"),
      );
    }
    if (raw.limits !== undefined) rule.limits = parseLimits(raw.limits, `${key}.limits`, fail);
    if (raw.grant_policy !== undefined) {
      if (effect !== "request") return fail(`${key}.grant_policy`, "only request rules take a grant policy");
      rule.grantPolicy = parseGrantPolicy(raw.grant_policy, `${key}.grant_policy`, fail);
    } else if (effect === "request") {
      rule.grantPolicy = EXECUTION_GRANT;
    }
    return rule;
  });
}

type Fail = (key: string | undefined, reason: string) => never;

function parseGrantPolicy(raw: unknown, key: string, fail: Fail): GrantPolicy {
  if (!isJsonObject(raw)) return fail(key, "must be an object");
  onlyKeys(raw, ["mode", "default_minutes", "max_minutes", "default_max_uses", "max_uses"], key, fail);
  const number = (name: string): number | undefined => {
    const value = raw[name];
    if (value === undefined) return undefined;
    if (typeof value !== "number" || !Number.isInteger(value) || value < 1 || value > INT32_MAX) {
      return fail(`${key}.${name}`, "must be a whole number from 1 to 2147483647");
    }
    return value;
  };
  const defaultMinutes = number("default_minutes");
  const maxMinutes = number("max_minutes");
  const defaultMaxUses = number("default_max_uses");
  const maxUses = number("max_uses");

  if (raw.mode === "execution") {
    if (defaultMinutes !== undefined || maxMinutes !== undefined) {
      return fail(key, "an execution grant covers one operation and takes no minutes");
    }
    if ((defaultMaxUses ?? 1) !== 1 || (maxUses ?? 1) !== 1) return fail(key, "an execution grant has exactly one use");
    return EXECUTION_GRANT;
  }
  if (raw.mode !== "window") return fail(`${key}.mode`, "must be window or execution");

  const minutes = defaultMinutes ?? Math.min(maxMinutes ?? DEFAULT_WINDOW_MINUTES, DEFAULT_WINDOW_MINUTES);
  const mostMinutes = maxMinutes ?? minutes;
  const uses = defaultMaxUses ?? Math.min(maxUses ?? DEFAULT_WINDOW_USES, DEFAULT_WINDOW_USES);
  const mostUses = maxUses ?? uses;
  if (minutes > mostMinutes) return fail(`${key}.default_minutes`, `must not exceed max_minutes (${mostMinutes})`);
  if (uses > mostUses) return fail(`${key}.default_max_uses`, `must not exceed max_uses (${mostUses})`);
  return { mode: "window", defaultMinutes: minutes, maxMinutes: mostMinutes, defaultMaxUses: uses, maxUses: mostUses };
}

function parseLimits(raw: unknown, key: string, fail: Fail): Record<string, number> {
  if (!isJsonObject(raw) || Object.keys(raw).length === 0) return fail(key, "must be an object of attribute names and their largest values (body_bytes, max_tokens)");
  return Object.fromEntries(
    Object.entries(raw).map(([name, value]) =>
      typeof value === "number" && Number.isSafeInteger(value) && value >= 0 ? [name, value] : fail(`${key}.${name}`, "must be a whole number of 0 or more"),
    ),
  );
}

function globList(raw: unknown, key: string, fail: Fail): string[] {
  if (!Array.isArray(raw) || raw.length === 0) return fail(key, "must be a non-empty list of names (`*` globs allowed)");
  return raw.map((entry, index) =>
    typeof entry === "string" && entry.trim() !== "" ? entry : fail(`${key}[${index}]`, "must be a non-empty string"),
  );
}

function onlyKeys(object: Record<string, unknown>, allowed: string[], key: string | undefined, fail: Fail): void {
  for (const name of Object.keys(object)) {
    if (!allowed.includes(name)) {
      fail(key === undefined ? name : `${key}.${name}`, `is not a known key (known: ${allowed.join(", ")})`);
    }
  }
}

