import type { JsonObject } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { AxonError, invalidArgument, type FieldViolation } from "../errors.js";
import { admit, admissionError, limitsFor, windowStartOf, type AdmissionLimits } from "./admission.js";
import { jsonBytes, requestHash } from "./canonical-json.js";
import type { ApprovalAnnouncer } from "./approval-webhooks.js";
import type { Clock } from "./clock.js";
import { isReasonLength, newId } from "./lifecycle.js";
import type { Notifier } from "./notifier.js";
import { decide, requestedGrantTerms, type Decision, type DecisionInput, type GrantTerms, type Policy } from "./policy.js";
import type { Provider } from "./providers/provider.js";
import type { ProviderRegistry } from "./providers/registry.js";
import type { GrantRow, OperationRow, StoreClient } from "./store.js";
import { writeSubmission, type PlannedSubmission } from "./submission-store.js";
import { submissionAttributes, traceContextToStore, traceSubmissionStep } from "../telemetry/operation-spans.js";

export interface SubmitInput {
  idempotencyKey: string;
  operation: string;
  target: JsonObject;
  arguments: JsonObject;
  reason: string;
}

/** What submissions and explicit grant requests are decided and admitted by. */
export interface RequestOptions {
  store: StoreClient;
  policy: Policy;
  admission: AdmissionLimits;
  providers: ProviderRegistry;
  notifier: Notifier;
  clock: Clock;
  /** How long an approval may stay pending before it expires. */
  approvalTtlMs: number;
  /** Tells the operators' webhooks of every new pending request. */
  announcer?: Pick<ApprovalAnnouncer, "announce"> | undefined;
}

export interface HeldCallOptions {
  /** The replica whose route executes the call. */
  holder: string;
  /** What rules' `limits` bound. */
  attributes?: Readonly<Record<string, number>> | undefined;
  /** Written only if a window grant covers it. */
  grantOnly?: boolean;
}

/** The policy's decision, with the window grant it would use as it was read. */
type SubmissionDecision = Exclude<Decision, { effect: "use_grant" }> | { effect: "use_grant"; grant: GrantRow };

export const idempotencyKeyPattern = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
export const maxTargetBytes = 16 * 1024;
const maxArgumentsBytes = 1024 * 1024;
const replayWindowMs = 30 * 24 * 60 * 60 * 1000;
/**
 * How often a submission that was neither written nor refused is decided again. It takes a change between its
 * statement and the next (a window grant's last use taken, a first submission's race): more than a few in a row
 * would be a bug, not load.
 */
const maxAttempts = 5;

/** A new operation row, approved (the policy's decision may then change its state): one id, revision 1, now. */
export function approvedOperation(
  fields: Pick<OperationRow, "clientId" | "idempotencyKey" | "requestHash" | "operation" | "reason" | "presentationTitle" | "presentationSummary"> & {
    target: JsonObject;
    arguments: JsonObject;
    now: Date;
  },
): PlannedSubmission["operation"] {
  const { now, ...rest } = fields;
  return {
    id: newId("op"),
    ...rest,
    state: "approved",
    revision: 1,
    approvalId: null,
    errorCode: null,
    errorMessage: null,
    createdAt: now,
    updatedAt: now,
    terminalAt: null,
    traceContext: traceContextToStore(),
    claimedBy: null,
    claimedAt: null,
  };
}

/** A pending approval's terms, as the policy grants them, expiring `approvalTtlMs` from now unless decided. */
export function pendingTerms(terms: GrantTerms, now: Date, approvalTtlMs: number) {
  return {
    status: "pending",
    mode: terms.mode,
    minutes: terms.minutes ?? null,
    maxUses: terms.maxUses,
    usesRemaining: terms.maxUses,
    expiresAt: new Date(now.getTime() + approvalTtlMs),
  };
}

/**
 * Submission (spec §3-§5): validate, decide by policy, then one write (`writeSubmission`) that replays by idempotency
 * key or else admits and persists: the key's read, admission, the rate count and every row together, or nothing. A
 * replay writes nothing, whatever the policy or admission would now say.
 */
export class Submissions {
  constructor(private readonly options: RequestOptions) {}

  /** Submits, or replays the operation submitted with the same key. `created` is false for a replay. */
  submit(clientId: string, input: SubmitInput): Promise<{ operation: OperationRow; created: boolean }> {
    return traceSubmissionStep(`submit ${input.operation}`, { "axon.operation.name": input.operation }, () => this.submitted(clientId, input), submissionAttributes);
  }

  private async submitted(clientId: string, input: SubmitInput): Promise<{ operation: OperationRow; created: boolean }> {
    const { provider, reason } = this.validate(clientId, input);
    const request = { ...input, reason };
    const hash = submissionHash(request);
    for (let attempt = 1; ; attempt++) {
      const now = this.options.clock.now();
      const decision = await traceSubmissionStep("policy decision", {}, () => this.decide(clientId, request, now), (decided) => ({ "axon.policy.effect": decided.effect }));
      const written = await this.write(clientId, this.plan(clientId, request, hash, provider, now, decision), attempt);
      if (written?.created) return written;
      // A concurrent duplicate won the key (the next round replays it), or the key's operation is past replaying.
      const replayed = written && (await this.replay(written.operation, request.idempotencyKey, hash));
      if (replayed) return { operation: replayed, created: false };
    }
  }

  /**
   * A native call's operation (see NativeCalls), as the policy decides it now: written for `holder`, the replica whose
   * route executes it, so the worker never claims it. A window grant's use makes it executing at once; a request,
   * pending with its approval, unless `grantOnly` (a call that cannot wait): then nothing is written and it resolves
   * undefined. No key replays it: the holder finds its pending calls itself.
   */
  async writeHeld(clientId: string, input: SubmitInput, options: HeldCallOptions & { grantOnly: true }): Promise<OperationRow | undefined>;
  async writeHeld(clientId: string, input: SubmitInput, options: HeldCallOptions): Promise<OperationRow>;
  async writeHeld(clientId: string, input: SubmitInput, options: HeldCallOptions): Promise<OperationRow | undefined> {
    const { holder, attributes, grantOnly } = options;
    const provider = this.options.providers.get(input.operation);
    if (!provider?.native) throw new Error(`${input.operation} is not a native operation`);
    const hash = submissionHash(input);
    for (let attempt = 1; ; attempt++) {
      const now = this.options.clock.now();
      const decision = await decideWithGrants(this.options, { clientId, operation: input.operation, target: input.target, now, ...(attributes ? { attributes } : {}) });
      if (grantOnly && decision.effect !== "use_grant") return undefined;
      const plan = this.plan(clientId, input, hash, provider, now, decision);
      plan.operation.claimedBy = holder;
      plan.operation.claimedAt = now;
      if (decision.effect === "use_grant") {
        plan.operation.state = "executing";
        plan.kind = "operation.executing";
      }
      // Its key is new: no other operation has it.
      const written = await this.write(clientId, plan, attempt);
      if (written?.created) return written.operation;
    }
  }

  /**
   * Writes a planned submission: the operation as written (`created`), or the one its key already named, or
   * undefined when it should be decided again (its key was taken meanwhile, or what it decided on changed); throws
   * when admission refuses it.
   */
  private async write(clientId: string, plan: PlannedSubmission, attempt: number): Promise<{ operation: OperationRow; created: boolean } | undefined> {
    const outcome = await writeSubmission(this.options.store, plan);
    if (outcome.kind === "existing") return { operation: outcome.operation, created: false };
    if (outcome.kind === "created") {
      this.options.notifier.created(plan.operation.id, plan.operation.state);
      if (plan.approval) {
        const native = this.options.providers.get(plan.operation.operation)?.native === true;
        this.options.announcer?.announce({ grant: plan.approval, operation: { ...plan.operation, native } });
      }
      return { operation: { ...plan.operation, result: null, recoveredBy: null }, created: true };
    }
    if (outcome.kind === "duplicate") return undefined;
    const admission = admit(this.options.admission, clientId, outcome.counts, plan.operation.createdAt, plan.limits.windowStart);
    if (!admission.admitted) {
      await this.options.store.auditRecord.create({
        data: { actor: clientId, actorKind: "client", action: "operation.refused", category: "rate_limited", detail: { reason: admission.reason, operation: plan.operation.operation } },
      });
      throw admissionError(admission);
    }
    if (attempt === maxAttempts) throw new Error(`submission neither written nor refused after ${maxAttempts} attempts`);
    return undefined;
  }

  /**
   * The operation this key already names, when the request is the same (semantic JSON equality); a conflict when it
   * differs. A terminal operation stays replayable for 30 days; after that its key is free again (undefined).
   */
  private async replay(existing: OperationRow, idempotencyKey: string, hash: string): Promise<OperationRow | undefined> {
    const { store, clock } = this.options;
    if (existing.terminalAt !== null && clock.now().getTime() - existing.terminalAt.getTime() > replayWindowMs) {
      // The old operation keeps its id and history; only its claim on the key ends.
      await store.operation.updateMany({
        where: { id: existing.id, idempotencyKey },
        data: { idempotencyKey: `${idempotencyKey}~retired~${existing.id}` },
      });
      return undefined;
    }
    if (existing.requestHash === hash) return existing;
    throw new AxonError(Code.Aborted, "IDEMPOTENCY_CONFLICT", "this idempotency key was used for another request", {
      metadata: { category: "conflict", operation_id: existing.id },
    });
  }

  /** The rows this submission writes, as the policy decided them. */
  private plan(clientId: string, request: SubmitInput, hash: string, provider: Provider, now: Date, decision: SubmissionDecision): PlannedSubmission {
    const limits = limitsFor(this.options.admission, clientId);
    const presentation = provider.present(request.target, request.arguments);
    const operation = approvedOperation({
      clientId,
      idempotencyKey: request.idempotencyKey,
      requestHash: hash,
      operation: request.operation,
      target: request.target,
      arguments: request.arguments,
      reason: request.reason,
      presentationTitle: presentation.title.slice(0, 160),
      presentationSummary: presentation.summary.slice(0, 500),
      now,
    });
    const planned = { limits: { ...limits, windowStart: windowStartOf(now, limits.windowSeconds) }, category: null };
    switch (decision.effect) {
      case "use_grant":
        return {
          ...planned,
          operation: { ...operation, approvalId: decision.grant.id },
          windowGrant: decision.grant,
          kind: "operation.approved",
          detail: { via: "window_grant" },
        };
      case "allow":
        return { ...planned, operation, kind: "operation.approved", detail: { rule: decision.ruleId } };
      case "request": {
        const terms = requestedGrantTerms(decision.grantPolicy);
        const approvalId = newId("req");
        return {
          ...planned,
          operation: { ...operation, state: "pending", approvalId },
          approval: {
            id: approvalId,
            revision: 1,
            clientId,
            operation: request.operation,
            target: request.target,
            reason: request.reason,
            ...pendingTerms(terms, now, this.options.approvalTtlMs),
            operationId: operation.id,
            createdAt: now,
            updatedAt: now,
          },
          kind: "request.created",
          detail: { rule: decision.ruleId },
        };
      }
      case "deny":
        return {
          ...planned,
          operation: { ...operation, state: "denied", terminalAt: now, errorCode: "operation_policy_denied", errorMessage: "the policy does not allow this operation" },
          kind: "operation.denied",
          category: "authorization",
          detail: { rule: decision.ruleId ?? null },
        };
    }
  }

  private decide(clientId: string, request: SubmitInput, now: Date): Promise<SubmissionDecision> {
    return decideWithGrants(this.options, { clientId, operation: request.operation, target: request.target, now });
  }

  private validate(clientId: string, input: SubmitInput) {
    const violations: FieldViolation[] = [];
    if (!idempotencyKeyPattern.test(input.idempotencyKey)) {
      violations.push({ field: "idempotency_key", description: "1-128 characters of A-Z a-z 0-9 . _ : - starting with a letter or digit" });
    }
    if (input.operation.length < 1 || input.operation.length > 128) violations.push({ field: "operation", description: "1 to 128 characters" });
    const reason = input.reason.trim();
    if (!isReasonLength(reason)) violations.push({ field: "reason", description: "1 to 2000 characters" });
    // Sizes are UTF-8 bytes of the JSON, as unYOLO counts them (agent-v1.md §11).
    if (jsonBytes(input.target) > maxTargetBytes) violations.push({ field: "target", description: "at most 16 KiB of UTF-8 JSON" });
    if (jsonBytes(input.arguments) > maxArgumentsBytes) violations.push({ field: "arguments", description: "at most 1 MiB of UTF-8 JSON" });
    const provider = this.options.providers.get(input.operation);
    if (!provider && input.operation.length > 0) violations.push({ field: "operation", description: "not a registered operation type" });
    if (provider?.native) {
      throw invalidArgument("NATIVE_OPERATION", `${input.operation} is not submitted: it happens through its native route`, [
        { field: "operation", description: "used through its native route (Git, /v1, a network's tool call), not submitted" },
      ]);
    }
    if (provider && violations.length === 0) violations.push(...provider.validate(input.target, input.arguments, clientId));
    if (violations.length > 0 || !provider) throw invalidArgument("INVALID_OPERATION", "the operation request is invalid", violations);
    return { provider, reason };
  }
}

/**
 * The policy's decision. Window grants are looked up only when the policy would otherwise ask for approval: deny
 * beats a grant, and under an allow rule a grant changes nothing but the use it would spend.
 */
export async function decideWithGrants(options: Pick<RequestOptions, "policy" | "store">, input: DecisionInput): Promise<SubmissionDecision> {
  const { policy, store } = options;
  // Without grants to consider, the policy never answers use_grant.
  const decision = decide(policy, input, []) as Exclude<Decision, { effect: "use_grant" }>;
  if (decision.effect !== "request") return decision;
  const windowGrants = await store.grant.findMany({ where: { clientId: input.clientId, operation: input.operation, status: "active", mode: "window" } });
  const withGrants = windowGrants.length === 0 ? decision : decide(policy, input, windowGrants);
  if (withGrants.effect !== "use_grant") return withGrants;
  // The grant as read: its use is taken only if nobody changed it since.
  return { effect: "use_grant", grant: windowGrants.find((grant) => grant.id === withGrants.grantId)! };
}

/** What a replay must match (semantic JSON equality), and what makes two native calls the same call. */
export function submissionHash(input: Pick<SubmitInput, "operation" | "target" | "arguments" | "reason">): string {
  return requestHash({ operation: input.operation, target: input.target, arguments: input.arguments, reason: input.reason });
}
