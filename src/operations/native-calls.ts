import type { JsonObject } from "@bufbuild/protobuf";
import { Prisma } from "../store/database.js";
import type { AuditBatch } from "./audit-batch.js";
import { requestHash } from "./canonical-json.js";
import type { Grants } from "./grants.js";
import { endHeldCall, releaseGrantUse } from "./held-calls.js";
import { terminalStates, transition } from "./lifecycle.js";
import { recordOutcome } from "./outcomes.js";
import { decide, requestedGrantTerms, type DecisionGrantPolicy, type DecisionInput, type GrantTerms } from "./policy.js";
import { findOperation, type OperationRow } from "./store.js";
import { submissionHash, type RequestOptions, type SubmitInput, type Submissions } from "./submission.js";

/** One call on a native route (Git, OpenAI's /v1, a held tool call), as policy and the operator see it. No secrets. */
export interface NativeCall {
  /** The authenticated Axon client. */
  clientId: string;
  /** A registered native operation: `git.push.force`, `inference.chat`, `agent.tool_call`. */
  operation: string;
  /** What policy target patterns and grants match: `{kind: "repo", host, owner, name, refs}`. */
  target: JsonObject;
  /** What the operator is shown and the audit keeps: ref updates and their classes, a model's sizes, a tool's arguments. */
  detail: JsonObject;
  /** One line for the operator's list. */
  summary: string;
  /** Numbers a rule's `limits` bound: `body_bytes`, `max_tokens`. */
  attributes?: Readonly<Record<string, number>>;
  /**
   * The call's parts when it has several, each decided on its own (a push's ref updates, each with its class): a
   * deny of any refuses the whole call, and it goes ahead outright only when every part is allowed. Otherwise the
   * call as a whole (`operation`, `target`: the most demanding part's class over every part) spends a grant or waits.
   */
  parts?: readonly NativeCallPart[];
}

export interface NativeCallPart {
  operation: string;
  target: JsonObject;
}

export type NativeOutcome =
  /** The upstream accepted it; `detail` (status, bytes) goes to the audit. */
  | { ok: true; detail?: JsonObject }
  /** The upstream refused it, or it failed before reaching the upstream. */
  | { ok: false; code: string; message: string; detail?: JsonObject };

export interface Allowed {
  effect: "allowed";
  via: { rule: string } | { grant: string } | { approval: string };
  /** What to execute: the call's detail, or what an operator edited it into on approval. */
  arguments: JsonObject;
  /**
   * Records the outcome, once (later calls do nothing): a reserved grant use is kept when the upstream accepted and
   * given back when it refused; a held call's operation ends succeeded or failed.
   */
  finish(outcome: NativeOutcome): Promise<void>;
}

export interface Refused {
  effect: "refused";
  /** unYOLO's words: operation_policy_denied, operation_approval_denied, operation_approval_expired, operation_canceled, ... */
  code: string;
  /** Safe to show the agent. */
  message: string;
  /** The deny rule, when a rule refused it. */
  rule?: string;
  /** The operator's reason, when an operator denied it. */
  reason?: string;
}

export interface Pending {
  effect: "pending";
  requestId: string;
}

export interface NativeCallsOptions extends RequestOptions {
  submissions: Submissions;
  grants: Grants;
  /** This replica: the holder of the calls it keeps open, whose lease ends them if it stops. */
  holder: string;
  audit: AuditBatch;
}

/** How often a held call looks at its operation when nothing woke it (a lost notification). */
const recheckMs = 1000;
/** What a request for approval on a call's behalf asks for when its rule grants one execution at a time. */
const oneUse: GrantTerms = { mode: "window", minutes: 60, maxUses: 1 };

/**
 * The one way native routes are decided: the same policy, window grants, operator approvals, admission and audit as
 * operations, for calls that are not submitted but carried by their own protocol. A call allowed or refused outright
 * writes nothing before it goes on (its audit record follows, batched); a call that spends a grant's use or waits for
 * an operator is an operation held by this replica, which executes it itself and records its outcome.
 */
export class NativeCalls {
  /** Waiters per held operation on this replica: a call withdrawn by one of them stays while another still waits. */
  private readonly waiting = new Map<string, number>();

  constructor(private readonly options: NativeCallsOptions) {}

  /**
   * For routes that keep the connection open (a push, a tool call a human must see): a request rule holds the call
   * until an operator decides, and `signal` aborting meanwhile withdraws it. The same call arriving again while it
   * waits shares its request.
   */
  async hold(call: NativeCall, options: { signal: AbortSignal; onHeld?: (requestId: string) => void }): Promise<Allowed | Refused> {
    const outright = this.outright(call);
    if (outright) return outright;
    const input = submitInput(call);
    const held = (await this.twin(call, submissionHash(input))) ?? (await this.write(call, input));
    if (held.state === "executing") return this.allowed(held, { grant: held.approvalId! });
    if (held.state === "pending" && held.approvalId) options.onHeld?.(held.approvalId);
    return this.decided(held, options.signal);
  }

  /**
   * For routes that answer at once (a chat completion): a request rule answers pending with a request for a window
   * grant made on the call's behalf (the one still pending for the same client, operation and target, if any); once
   * approved, matching calls spend its uses.
   */
  async request(call: NativeCall): Promise<Allowed | Refused | Pending> {
    const outright = this.outright(call);
    if (outright) return outright;
    const { store, grants, submissions, holder, policy, clock } = this.options;
    const granted = await submissions.writeHeld(call.clientId, submitInput(call), { holder, attributes: call.attributes, grantOnly: true });
    if (granted) return this.allowed(granted, { grant: granted.approvalId! });
    // No grant covers it: a request for one, made on its behalf.
    const hash = requestHash({ operation: call.operation, target: call.target });
    const pending = await store.grant.findFirst({ where: { clientId: call.clientId, operation: call.operation, requestHash: hash, status: "pending" } });
    if (pending) return { effect: "pending", requestId: pending.id };
    const decision = decide(policy, decisionInput(call, clock.now()), []);
    if (decision.effect !== "request") throw new Error("a native call neither decided outright nor asking for approval");
    const request = { operation: call.operation, target: call.target, reason: call.summary, terms: windowTerms(decision.grantPolicy), requestHash: hash, clientRequestId: null };
    return { effect: "pending", requestId: (await grants.createPending(call.clientId, request)).grant.id };
  }

  /** Writes the audit records still batched. */
  flush(): Promise<void> {
    return this.options.audit.flush();
  }

  /** Allow and deny need no store: they are decided, and audited, without waiting on it. */
  private outright(call: NativeCall): Allowed | Refused | undefined {
    const { providers, policy, clock } = this.options;
    const parts = call.parts ?? [call];
    for (const { operation } of [call, ...parts]) {
      if (!providers.get(operation)?.native) throw new Error(`${operation} is not a registered native operation`);
    }
    const now = clock.now();
    const decisions = parts.map((part) => decide(policy, decisionInput({ ...call, ...part }, now), []));
    const denied = decisions.find((decision) => decision.effect === "deny");
    if (denied) return this.deniedByRule(call, denied.ruleId);
    const rules = decisions.map((decision) => (decision.effect === "allow" ? decision.ruleId : undefined));
    if (rules.every((rule) => rule !== undefined)) return this.allowedByRule(call, [...new Set(rules)].join(", "));
    return undefined;
  }

  /** The call's operation, held by this replica: executing on a grant's use, pending for an operator. */
  private write(call: NativeCall, input: SubmitInput): Promise<OperationRow> {
    return this.options.submissions.writeHeld(call.clientId, input, { holder: this.options.holder, attributes: call.attributes });
  }

  /** The same call still waiting for a decision, now held by this replica too (the client may have moved). */
  private async twin(call: NativeCall, hash: string): Promise<OperationRow | undefined> {
    const { store, clock, holder } = this.options;
    for (;;) {
      const found = await store.operation.findFirst({
        where: { clientId: call.clientId, operation: call.operation, requestHash: hash, state: { in: ["pending", "approved"] }, claimedBy: { not: null } },
        orderBy: { createdAt: "asc" },
      });
      if (!found || found.claimedBy === holder) return found ?? undefined;
      const now = clock.now();
      const taken = await transition(store, found, { claimedBy: holder, claimedAt: now }, now);
      if (taken) return taken;
    }
  }

  /** Waits for the operator: approved (and taken by this replica to execute), or ended. */
  private async decided(held: OperationRow, signal: AbortSignal): Promise<Allowed | Refused> {
    const { store, notifier, clock, holder } = this.options;
    this.waiting.set(held.id, (this.waiting.get(held.id) ?? 0) + 1);
    try {
      for (;;) {
        const wake = notifier.waitForChange(held.id, recheckMs, signal);
        const current = (await findOperation(store, Prisma.sql`"id" = ${held.id}`)) ?? held;
        if (current.state === "approved") {
          const now = clock.now();
          const taken = await transition(store, current, { state: "executing", claimedBy: holder, claimedAt: now }, now);
          if (!taken) continue; // it changed meanwhile: look again
          notifier.rowChanged(taken);
          return this.allowed(taken, { approval: taken.approvalId! });
        }
        if (current.state === "executing") return { effect: "refused", code: "operation_in_progress", message: "the same call went ahead on another connection" };
        if (terminalStates.has(current.state)) return this.ended(current);
        if (signal.aborted) return this.withdraw(current);
        await wake;
      }
    } finally {
      const left = (this.waiting.get(held.id) ?? 1) - 1;
      if (left === 0) this.waiting.delete(held.id);
      else this.waiting.set(held.id, left);
    }
  }

  /** The client left: the request goes with it, unless another of its connections still waits on it. */
  private async withdraw(current: OperationRow): Promise<Refused> {
    const { store, clock, notifier, holder } = this.options;
    if (this.waiting.get(current.id) === 1 && current.claimedBy === holder) {
      const end = { state: "canceled" as const, errorCode: "operation_canceled", errorMessage: "the client left before it was decided", actor: current.clientId };
      const ended = await endHeldCall(store, current, end, clock.now());
      if (ended) notifier.rowChanged(ended);
    }
    return { effect: "refused", code: "operation_canceled", message: "the client left before it was decided" };
  }

  private async ended(operation: OperationRow): Promise<Refused> {
    const code = operation.errorCode ?? `operation_${operation.state}`;
    const message = operation.errorMessage ?? `the call ended ${operation.state}`;
    if (operation.state !== "denied" || !operation.approvalId) return { effect: "refused", code, message };
    const approval = await this.options.store.grant.findUnique({ where: { id: operation.approvalId }, select: { decisionReason: true } });
    return { effect: "refused", code, message, ...(approval?.decisionReason ? { reason: approval.decisionReason } : {}) };
  }

  private allowed(operation: OperationRow, via: Allowed["via"]): Allowed {
    const { store, clock, notifier, holder } = this.options;
    return {
      effect: "allowed",
      via,
      arguments: operation.arguments as JsonObject,
      finish: once(async (outcome) => {
        const now = clock.now();
        const ended = outcome.ok
          ? { state: "succeeded" as const, result: outcome.detail ?? {} }
          : { state: "failed" as const, code: outcome.code, message: outcome.message };
        const written = await recordOutcome(store, holder, operation.id, ended, now);
        if (written) notifier.rowChanged(written);
        if (!outcome.ok && operation.approvalId) await releaseGrantUse(store, operation.approvalId, operation.clientId, now);
      }),
    };
  }

  private allowedByRule(call: NativeCall, rule: string): Allowed {
    const { audit } = this.options;
    return {
      effect: "allowed",
      via: { rule },
      arguments: call.detail,
      finish: once(async (outcome) => {
        const detail = { operation: call.operation, target: call.target, rule, call: call.detail, ...(outcome.detail ? { outcome: outcome.detail } : {}) };
        if (outcome.ok) audit.add({ actor: call.clientId, actorKind: "client", action: "native.succeeded", detail });
        else audit.add({ actor: call.clientId, actorKind: "client", action: "native.failed", category: "other", detail: { ...detail, code: outcome.code } });
      }),
    };
  }

  private deniedByRule(call: NativeCall, rule: string | undefined): Refused {
    this.options.audit.add({
      actor: call.clientId,
      actorKind: "client",
      action: "native.denied",
      category: "authorization",
      detail: { operation: call.operation, target: call.target, rule: rule ?? null, call: call.detail },
    });
    return {
      effect: "refused",
      code: "operation_policy_denied",
      message: rule === undefined ? "no policy rule allows it" : `the policy refuses it (rule ${rule})`,
      ...(rule === undefined ? {} : { rule }),
    };
  }
}

function decisionInput(call: NativeCall, now?: Date): DecisionInput {
  return { clientId: call.clientId, operation: call.operation, target: call.target, ...(now ? { now } : {}), ...(call.attributes ? { attributes: call.attributes } : {}) };
}

/** A held call as the operation it is stored as: its detail is its arguments, its summary its reason. */
function submitInput(call: NativeCall): SubmitInput {
  return { idempotencyKey: `native:${crypto.randomUUID()}`, operation: call.operation, target: call.target, arguments: call.detail, reason: call.summary };
}

/** A rule that approves one execution at a time still gives a call's request a window: of one use. */
function windowTerms(grantPolicy: DecisionGrantPolicy): GrantTerms {
  const terms = requestedGrantTerms(grantPolicy);
  return terms.mode === "window" ? terms : oneUse;
}

function once(record: (outcome: NativeOutcome) => Promise<void>): (outcome: NativeOutcome) => Promise<void> {
  let recorded: Promise<void> | undefined;
  return (outcome) => (recorded ??= record(outcome));
}
