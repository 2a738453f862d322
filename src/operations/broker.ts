import { randomBytes } from "node:crypto";
import type { JsonObject } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { AxonError, invalidArgument, notFound, type FieldViolation } from "../errors.js";
import type { Logger } from "../logger.js";
import { admit, admissionError, limitsFor, windowStartOf, type AdmissionLimits } from "./admission.js";
import { requestHash } from "./canonical-json.js";
import type { Notifier } from "./notifier.js";
import { decide, narrowGrant, requestedGrantTerms, type GrantTermsInput, type Policy } from "./policy.js";
import type { Provider } from "./providers/provider.js";
import type { ProviderRegistry } from "./providers/registry.js";
import type { EventRow, GrantRow, OperationRow, StoreClient, StoreTransaction } from "./store.js";

export const terminalStates = new Set(["succeeded", "failed", "denied", "expired", "canceled"]);
const activeStates = ["pending", "approved", "executing"];
const idempotencyKeyPattern = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
const maxTargetBytes = 16 * 1024;
const maxArgumentsBytes = 1024 * 1024;
const replayWindowMs = 30 * 24 * 60 * 60 * 1000;
/** How often waits, watches and the event feed re-read the database when nothing woke them. */
const recheckMs = 1000;
/** How long after an event the feed waits for a missing seq before it goes past it (see `events`). */
const eventGapGraceMs = 3_000;

export interface SubmitInput {
  idempotencyKey: string;
  operation: string;
  target: JsonObject;
  arguments: JsonObject;
  reason: string;
}

export interface GrantInput {
  clientRequestId: string;
  operation: string;
  target: JsonObject;
  reason: string;
  minutes?: number;
  maxUses?: number;
}

export interface Clock {
  now(): Date;
}

export interface BrokerOptions {
  store: StoreClient;
  policy: Policy;
  admission: AdmissionLimits;
  providers: ProviderRegistry;
  notifier: Notifier;
  logger: Logger;
  clock?: Clock;
  /** How long an approval may stay pending before it expires. */
  approvalTtlMinutes?: number;
}

/**
 * The operations lifecycle: identity is already established; this does validation, idempotent replay,
 * admission, policy, approvals and every state change, each a compare-and-swap on `revision`.
 * It knows nothing of HTTP or gRPC.
 */
export class OperationsBroker {
  private readonly clock: Clock;
  private readonly approvalTtlMs: number;

  constructor(private readonly options: BrokerOptions) {
    this.clock = options.clock ?? { now: () => new Date() };
    this.approvalTtlMs = (options.approvalTtlMinutes ?? 60) * 60_000;
  }

  /** Submits, or replays the operation submitted with the same key. `created` is false for a replay. */
  async submit(clientId: string, input: SubmitInput): Promise<{ operation: OperationRow; created: boolean }> {
    const { provider, reason } = this.validate(input);
    input = { ...input, reason };
    const hash = requestHash({ operation: input.operation, target: input.target, arguments: input.arguments, reason: input.reason });
    const replayed = await this.replay(this.options.store, clientId, input.idempotencyKey, hash);
    if (replayed) return { operation: replayed, created: false };

    const result = await this.admitAndDecide(clientId, input, hash, provider);
    if (result.created) this.options.notifier.changed(result.operation.id);
    return result;
  }

  /** Admission, policy and persistence, in one serialized transaction; a refusal leaves only its audit record. */
  private async admitAndDecide(clientId: string, input: SubmitInput, hash: string, provider: Provider) {
    try {
      return await this.decideSubmission(clientId, input, hash, provider);
    } catch (error) {
      if (error instanceof AxonError && error.code === Code.ResourceExhausted) {
        await this.options.store.auditRecord.create({
          data: { actor: clientId, actorKind: "client", action: "operation.refused", category: "rate_limited", detail: { reason: error.reason, operation: input.operation } },
        });
      }
      throw error;
    }
  }

  private decideSubmission(clientId: string, input: SubmitInput, hash: string, provider: Provider) {
    const { store, policy } = this.options;
    return store.serialized(async (tx) => {
      // A concurrent duplicate may have won while this one waited for the lock.
      const raced = await this.replay(tx, clientId, input.idempotencyKey, hash, true);
      if (raced) return { operation: raced, created: false };

      const now = this.clock.now();
      await this.admit(tx, clientId, now);

      const windowGrants = await tx.grant.findMany({
        where: { clientId, operation: input.operation, status: "active", mode: "window" },
      });
      let decision = decide(policy, { clientId, operation: input.operation, target: input.target, now }, windowGrants);
      const id = newId("op");
      const presentation = provider.present(input.target, input.arguments);
      const base = {
        id,
        clientId,
        idempotencyKey: input.idempotencyKey,
        requestHash: hash,
        operation: input.operation,
        target: input.target,
        arguments: input.arguments,
        reason: input.reason,
        revision: 1,
        presentationTitle: presentation.title.slice(0, 160),
        presentationSummary: presentation.summary.slice(0, 500),
        createdAt: now,
        updatedAt: now,
      };

      if (decision.effect === "use_grant") {
        const reserved = await reserveGrantUse(tx, decision.grantId, now);
        if (!reserved) decision = decide(policy, { clientId, operation: input.operation, target: input.target, now }, []);
        else {
          const operation = await tx.operation.create({ data: { ...base, state: "approved", approvalId: decision.grantId } });
          await record(tx, "operation.approved", operation, { grantId: decision.grantId, actor: clientId, detail: { via: "window_grant" } });
          return { operation, created: true };
        }
      }
      switch (decision.effect) {
        case "allow": {
          const operation = await tx.operation.create({ data: { ...base, state: "approved" } });
          await record(tx, "operation.approved", operation, { actor: clientId, detail: { rule: decision.ruleId } });
          return { operation, created: true };
        }
        case "request": {
          const terms = requestedGrantTerms(decision.grantPolicy);
          const grantId = newId("req");
          await tx.grant.create({
            data: {
              id: grantId,
              revision: 1,
              clientId,
              status: "pending",
              operation: input.operation,
              target: input.target,
              reason: input.reason,
              mode: terms.mode,
              minutes: terms.minutes ?? null,
              maxUses: terms.maxUses,
              usesRemaining: terms.maxUses,
              expiresAt: new Date(now.getTime() + this.approvalTtlMs),
              operationId: id,
              createdAt: now,
              updatedAt: now,
            },
          });
          const operation = await tx.operation.create({ data: { ...base, state: "pending", approvalId: grantId } });
          await record(tx, "request.created", operation, { grantId, actor: clientId, detail: { rule: decision.ruleId } });
          return { operation, created: true };
        }
        default: {
          const operation = await tx.operation.create({
            data: {
              ...base,
              state: "denied",
              terminalAt: now,
              errorCode: "policy_denied",
              errorMessage: "the policy does not allow this operation",
            },
          });
          await record(tx, "operation.denied", operation, { actor: clientId, category: "authorization", detail: { rule: decision.effect === "deny" ? (decision.ruleId ?? null) : null } });
          return { operation, created: true };
        }
      }
    });
  }

  async get(clientId: string, id: string): Promise<OperationRow> {
    const operation = await this.options.store.operation.findFirst({ where: { id, clientId } });
    // Another client's operation is as absent as one that never existed.
    if (!operation) throw notFound("OPERATION_NOT_FOUND", "operation not found", { operation_id: id });
    return operation;
  }

  async list(
    clientId: string,
    query: { idempotencyKey?: string; state?: string; limit?: number; cursor?: string },
  ): Promise<{ operations: OperationRow[]; nextCursor?: string }> {
    const limit = query.limit || 20;
    if (limit < 1 || limit > 50) throw invalidArgument("INVALID_LIMIT", "limit must be 1 to 50", [{ field: "limit", description: "1 to 50" }]);
    if (query.state && !terminalStates.has(query.state) && !activeStates.includes(query.state)) {
      throw invalidArgument("INVALID_STATE", "unknown state", [{ field: "state", description: "an operation state" }]);
    }
    const rows = await this.options.store.operation.findMany({
      where: {
        clientId,
        ...(query.idempotencyKey ? { idempotencyKey: query.idempotencyKey } : {}),
        ...(query.state ? { state: query.state } : {}),
        ...afterCursor(query.cursor),
      },
      orderBy: newestFirst,
      take: limit + 1,
    });
    const { items, nextCursor } = pageOf(rows, limit);
    return { operations: items, ...(nextCursor ? { nextCursor } : {}) };
  }

  /** Long poll: the operation once its revision passes `afterRevision` or it is terminal, else when time is up. */
  async wait(clientId: string, id: string, afterRevision: number, waitSeconds: number | undefined, signal?: AbortSignal): Promise<OperationRow> {
    const seconds = waitSeconds ?? 30;
    if (!Number.isInteger(seconds) || seconds < 0 || seconds > 30) {
      throw invalidArgument("INVALID_WAIT_SECONDS", "wait_seconds must be 0 to 30", [{ field: "wait_seconds", description: "0 to 30" }]);
    }
    if (afterRevision < 0) {
      throw invalidArgument("INVALID_AFTER_REVISION", "after_revision must be 0 or more", [{ field: "after_revision", description: ">= 0" }]);
    }
    const deadline = Date.now() + seconds * 1000;
    for (;;) {
      // Re-read every second even without a wake-up: a change whose notification was lost (PostgreSQL reconnecting)
      // or never sent (another process on the same SQLite file) is still seen promptly.
      const wake = this.options.notifier.waitForChange(id, Math.min(recheckMs, Math.max(0, deadline - Date.now())), signal);
      const operation = await this.get(clientId, id);
      if (operation.revision > afterRevision || terminalStates.has(operation.state) || Date.now() >= deadline || signal?.aborted) {
        return operation;
      }
      await wake;
    }
  }

  /** The operation at each new revision, until it is terminal. */
  async *watch(clientId: string, id: string, afterRevision: number, signal: AbortSignal): AsyncIterable<OperationRow> {
    let seen = afterRevision;
    while (!signal.aborted) {
      const operation = await this.wait(clientId, id, seen, 30, signal);
      if (operation.revision > seen) {
        seen = operation.revision;
        yield operation;
      }
      if (terminalStates.has(operation.state)) return;
    }
  }

  /** Only the requester, only pending or approved; terminal ones come back unchanged. */
  async cancel(clientId: string, id: string): Promise<OperationRow> {
    for (;;) {
      const operation = await this.get(clientId, id);
      if (terminalStates.has(operation.state)) return operation;
      if (operation.state === "executing") {
        throw new AxonError(Code.Aborted, "OPERATION_NOT_CANCELABLE", "an executing operation cannot be canceled", {
          metadata: { category: "conflict", operation_id: id },
        });
      }
      const now = this.clock.now();
      const changed = await this.options.store.serialized(async (tx) => {
        const updated = await transition(tx, operation, { state: "canceled", terminalAt: now, errorCode: "canceled", errorMessage: "canceled by the requester" }, now);
        if (!updated) return undefined;
        // A pending approval goes with its operation; a window grant serves others and survives.
        if (operation.approvalId) {
          await tx.grant.updateMany({
            where: { id: operation.approvalId, status: "pending" },
            data: { status: "canceled", revision: { increment: 1 }, updatedAt: now },
          });
        }
        await record(tx, "operation.canceled", updated, { actor: clientId, category: "canceled" });
        return updated;
      });
      if (changed) {
        this.options.notifier.changed(id);
        return changed;
      }
    }
  }

  // ---- explicit grants ------------------------------------------------------------------------------------

  /**
   * Asks ahead of use for a window grant that matching operations will then use: policy-checked, admitted like a
   * submission, and pending until an operator decides. Idempotent by `client_request_id`.
   */
  async createGrant(clientId: string, input: GrantInput): Promise<{ grant: GrantRow; created: boolean }> {
    const violations: FieldViolation[] = [];
    if (!idempotencyKeyPattern.test(input.clientRequestId)) violations.push({ field: "client_request_id", description: "1-128 characters of A-Z a-z 0-9 . _ : -" });
    if (!this.options.providers.get(input.operation)) violations.push({ field: "operation", description: "not a registered operation type" });
    const reason = input.reason.trim();
    if (reason.length < 1 || reason.length > 2000) violations.push({ field: "reason", description: "1 to 2000 characters" });
    if (JSON.stringify(input.target).length > maxTargetBytes) violations.push({ field: "target", description: "at most 16 KiB" });
    if (violations.length > 0) throw invalidArgument("INVALID_GRANT", "the grant request is invalid", violations);

    const asked = { minutes: input.minutes ?? null, max_uses: input.maxUses ?? null };
    const hash = requestHash({ operation: input.operation, target: input.target, reason, ...asked });
    const now = this.clock.now();
    const decision = decide(this.options.policy, { clientId, operation: input.operation, target: input.target, now }, []);
    if (decision.effect === "deny" || decision.effect === "use_grant") {
      throw new AxonError(Code.PermissionDenied, "POLICY_DENIED", "the policy does not allow this operation", { metadata: { category: "authorization" } });
    }
    if (decision.effect === "allow") {
      throw new AxonError(Code.FailedPrecondition, "GRANT_NOT_REQUIRED", "the policy already allows this operation without a grant");
    }
    const terms = requestedGrantTerms(decision.grantPolicy, asked);
    if (terms.mode === "execution") {
      throw invalidArgument("GRANT_NOT_AVAILABLE", "this operation is approved one execution at a time. Submit the operation instead", [
        { field: "operation", description: "its policy gives execution grants only" },
      ]);
    }

    const result = await this.options.store.serialized(async (tx) => {
      const existing = await tx.grant.findUnique({ where: { clientId_clientRequestId: { clientId, clientRequestId: input.clientRequestId } } });
      if (existing) {
        if (existing.requestHash === hash) return { grant: existing, created: false };
        throw new AxonError(Code.Aborted, "IDEMPOTENCY_CONFLICT", "this client_request_id was used for another request", {
          metadata: { category: "conflict", request_id: existing.id },
        });
      }
      await this.admit(tx, clientId, now);
      const grant = await tx.grant.create({
        data: {
          id: newId("req"),
          revision: 1,
          clientId,
          status: "pending",
          operation: input.operation,
          target: input.target,
          reason,
          mode: terms.mode,
          minutes: terms.minutes ?? null,
          maxUses: terms.maxUses,
          usesRemaining: terms.maxUses,
          expiresAt: new Date(now.getTime() + this.approvalTtlMs),
          clientRequestId: input.clientRequestId,
          requestHash: hash,
          createdAt: now,
          updatedAt: now,
        },
      });
      await recordGrant(tx, "request.created", grant, clientId);
      return { grant, created: true };
    });
    if (result.created) this.options.notifier.changed(result.grant.id);
    return result;
  }

  async getGrant(clientId: string, id: string): Promise<GrantRow> {
    const grant = await this.options.store.grant.findFirst({ where: { id, clientId } });
    if (!grant) throw notFound("GRANT_NOT_FOUND", "grant not found", { grant_id: id });
    return grant;
  }

  async listGrants(clientId: string, query: { status?: string; limit?: number; cursor?: string }) {
    const limit = query.limit || 20;
    if (limit < 1 || limit > 50) throw invalidArgument("INVALID_LIMIT", "limit must be 1 to 50", [{ field: "limit", description: "1 to 50" }]);
    const rows = await this.options.store.grant.findMany({
      where: { clientId, ...(query.status ? { status: query.status } : {}), ...afterCursor(query.cursor) },
      orderBy: newestFirst,
      take: limit + 1,
    });
    const { items, nextCursor } = pageOf(rows, limit);
    return { grants: items, ...(nextCursor ? { nextCursor } : {}) };
  }

  // ---- operator decisions ---------------------------------------------------------------------------------

  async getRequest(id: string): Promise<{ grant: GrantRow; operation?: OperationRow }> {
    const grant = await this.options.store.grant.findUnique({ where: { id } });
    if (!grant) throw notFound("REQUEST_NOT_FOUND", "request not found", { request_id: id });
    const operation = grant.operationId ? await this.options.store.operation.findUnique({ where: { id: grant.operationId } }) : null;
    return { grant, ...(operation ? { operation } : {}) };
  }

  async listRequests(query: { status?: string; requester?: string; operation?: string; limit?: number; cursor?: string }) {
    const limit = query.limit || 50;
    if (limit < 1 || limit > 100) throw invalidArgument("INVALID_LIMIT", "limit must be 1 to 100", [{ field: "limit", description: "1 to 100" }]);
    const statuses: Record<string, string[] | undefined> = {
      pending: ["pending"],
      active: ["active"],
      history: ["denied", "expired", "consumed", "revoked", "canceled", "failed"],
      all: undefined,
    };
    const status = query.status || "pending";
    if (!(status in statuses)) {
      throw invalidArgument("INVALID_STATUS", "status must be pending, active, history or all", [{ field: "status", description: "pending, active, history or all" }]);
    }
    const only = statuses[status];
    const rows = await this.options.store.grant.findMany({
      where: {
        ...(only ? { status: { in: only } } : {}),
        ...(query.requester ? { clientId: query.requester } : {}),
        ...(query.operation ? { operation: query.operation } : {}),
        ...afterCursor(query.cursor),
      },
      orderBy: newestFirst,
      take: limit + 1,
    });
    const { items, nextCursor } = pageOf(rows, limit);
    return { requests: items, ...(nextCursor ? { nextCursor } : {}) };
  }

  /** Approves a pending request, possibly narrowing it; its operation becomes approved with one use reserved. */
  approve(operator: string, id: string, decision: { expectedRevision: number; reason?: string } & GrantTermsInput) {
    return this.decide(operator, id, decision.expectedRevision, "pending", async (tx, grant, now, changed) => {
      const terms = narrowGrant({ mode: grant.mode as "window" | "execution", ...(grant.minutes != null ? { minutes: grant.minutes } : {}), maxUses: grant.maxUses ?? 1 }, decision);
      const usesRemaining = terms.maxUses - (grant.operationId ? 1 : 0);
      const approved = await tx.grant.update({
        where: { id },
        data: {
          status: usesRemaining > 0 ? "active" : "consumed",
          mode: terms.mode,
          minutes: terms.minutes ?? null,
          maxUses: terms.maxUses,
          usesRemaining,
          usedCount: grant.operationId ? 1 : 0,
          expiresAt: terms.minutes ? new Date(now.getTime() + terms.minutes * 60_000) : null,
          decidedBy: operator,
          decisionReason: decision.reason ?? null,
          revision: { increment: 1 },
          updatedAt: now,
        },
      });
      await this.driveLinkedOperation(tx, grant, now, { state: "approved" }, changed);
      await recordGrant(tx, "request.approved", approved, operator);
      return approved;
    });
  }

  deny(operator: string, id: string, decision: { expectedRevision: number; reason?: string }) {
    return this.decide(operator, id, decision.expectedRevision, "pending", async (tx, grant, now, changed) => {
      const denied = await tx.grant.update({
        where: { id },
        data: { status: "denied", decidedBy: operator, decisionReason: decision.reason ?? null, revision: { increment: 1 }, updatedAt: now },
      });
      const change = { state: "denied", terminalAt: now, errorCode: "request_denied", errorMessage: "an operator denied the request" };
      await this.driveLinkedOperation(tx, grant, now, change, changed);
      await recordGrant(tx, "request.denied", denied, operator);
      return denied;
    });
  }

  /** Revokes an active grant; operations it approved that have not started are canceled. */
  revoke(operator: string, id: string, decision: { expectedRevision: number; reason?: string }) {
    return this.decide(operator, id, decision.expectedRevision, "active", async (tx, grant, now, changed) => {
      const revoked = await tx.grant.update({
        where: { id },
        data: { status: "revoked", decidedBy: operator, decisionReason: decision.reason ?? null, revision: { increment: 1 }, updatedAt: now },
      });
      const waiting = await tx.operation.findMany({ where: { approvalId: id, state: "approved" } });
      for (const operation of waiting) {
        const canceled = await transition(tx, operation, { state: "canceled", terminalAt: now, errorCode: "grant_revoked", errorMessage: "an operator revoked the grant" }, now);
        if (canceled) changed.push(canceled.id);
      }
      await recordGrant(tx, "request.revoked", revoked, operator);
      return revoked;
    });
  }

  /** Expires pending approvals and window grants past their time. Safe to run on several replicas at once. */
  async sweep(): Promise<number> {
    const now = this.clock.now();
    const due = await this.options.store.grant.findMany({ where: { status: { in: ["pending", "active"] }, expiresAt: { lte: now } }, take: 100 });
    let expired = 0;
    for (const grant of due) {
      const changed: string[] = [];
      await this.options.store.serialized(async (tx) => {
        const { count } = await tx.grant.updateMany({
          where: { id: grant.id, revision: grant.revision },
          data: { status: "expired", revision: { increment: 1 }, updatedAt: now },
        });
        if (count === 0) return;
        expired++;
        if (grant.status === "pending") {
          const change = { state: "expired", terminalAt: now, errorCode: "request_expired", errorMessage: "the request was not decided in time" };
          await this.driveLinkedOperation(tx, grant, now, change, changed);
        }
        await recordGrant(tx, "request.expired", { ...grant, status: "expired" }, "sweeper");
      });
      this.notifyCommitted(changed);
    }
    return expired;
  }

  /**
   * Admission, counted inside the serialized transaction so limits hold across replicas. A refusal throws before
   * anything is written; an admitted submission takes one slot of the client's rate window.
   */
  private async admit(tx: StoreTransaction, clientId: string, now: Date): Promise<void> {
    const { admission } = this.options;
    const windowStart = windowStartOf(now, limitsFor(admission, clientId).windowSeconds);
    const counts = {
      clientRequestsInWindow: (await tx.admissionCounter.findUnique({ where: { clientId_windowStart: { clientId, windowStart } } }))?.count ?? 0,
      clientActive: await tx.operation.count({ where: { clientId, state: { in: activeStates } } }),
      clientPending: await tx.grant.count({ where: { clientId, status: "pending" } }),
      globalActive: await tx.operation.count({ where: { state: { in: activeStates } } }),
      globalExecuting: await tx.operation.count({ where: { state: "executing" } }),
    };
    const admission_ = admit(admission, clientId, counts, now, windowStart);
    if (!admission_.admitted) throw admissionError(admission_);
    await tx.admissionCounter.upsert({
      where: { clientId_windowStart: { clientId, windowStart } },
      create: { clientId, windowStart, count: 1 },
      update: { count: { increment: 1 } },
    });
  }

  /** The event feed after `afterSeq` (undefined = from now on), in seq order, as it grows; wakes on changes. */
  async *events(afterSeq: bigint | number | undefined, signal: AbortSignal): AsyncIterable<EventRow> {
    const { store, notifier } = this.options;
    let seen = afterSeq === undefined ? ((await store.event.findFirst({ orderBy: { seq: "desc" } }))?.seq ?? 0) : Number(afterSeq);
    while (!signal.aborted) {
      const wake = notifier.waitForChange("*", recheckMs, signal);
      const batch = await store.event.findMany({ where: { seq: { gt: seen } }, orderBy: { seq: "asc" }, take: 100 });
      let gap = false;
      for (const event of batch) {
        // PostgreSQL hands out a seq when the row is inserted, not when it commits: a seq missing just before a young
        // event may belong to a transaction still on its way. Wait for it (a rolled-back one never comes), so that a
        // reader resuming after the last seq it saw skips nothing.
        gap = event.seq !== seen + 1 && Date.now() - event.createdAt.getTime() < eventGapGraceMs;
        if (gap) break;
        seen = event.seq;
        yield event;
      }
      if (batch.length === 0 || gap) await wake;
    }
  }

  private async decide(
    operator: string,
    id: string,
    expectedRevision: number,
    requiredStatus: string,
    apply: (tx: StoreTransaction, grant: GrantRow, now: Date, changed: string[]) => Promise<GrantRow>,
  ): Promise<{ grant: GrantRow; operation?: OperationRow }> {
    const changed: string[] = [];
    const decided = await this.options.store.serialized(async (tx) => {
      const grant = await tx.grant.findUnique({ where: { id } });
      if (!grant) throw notFound("REQUEST_NOT_FOUND", "request not found", { request_id: id });
      if (grant.revision !== expectedRevision) {
        throw new AxonError(Code.Aborted, "STALE_REVISION", "the request changed since it was read", {
          metadata: { category: "conflict", current_revision: String(grant.revision) },
        });
      }
      if (grant.status !== requiredStatus) {
        throw new AxonError(Code.Aborted, requiredStatus === "pending" ? "REQUEST_NOT_PENDING" : "REQUEST_NOT_ACTIVE", `the request is ${grant.status}`, {
          metadata: { category: "conflict", status: grant.status },
        });
      }
      return apply(tx, grant, this.clock.now(), changed);
    });
    this.notifyCommitted(changed);
    const operation = decided.operationId ? await this.options.store.operation.findUnique({ where: { id: decided.operationId } }) : null;
    return { grant: decided, ...(operation ? { operation } : {}) };
  }

  /** The linked approval drives its operation (spec §3). */
  private async driveLinkedOperation(tx: StoreTransaction, grant: GrantRow, now: Date, change: Partial<OperationRow>, changed: string[]): Promise<void> {
    if (!grant.operationId) return;
    const operation = await tx.operation.findUnique({ where: { id: grant.operationId } });
    if (!operation || operation.state !== "pending") return;
    const updated = await transition(tx, operation, change, now);
    if (updated) {
      changed.push(updated.id);
      await record(tx, `operation.${updated.state}`, updated, { grantId: grant.id, actor: "operator" });
    }
  }

  /** Wakes waiters for the operations a transaction changed, once it has committed (never for one rolled back). */
  private notifyCommitted(changed: string[]): void {
    for (const id of changed) this.options.notifier.changed(id);
  }

  /**
   * The operation this key already names, when the request is the same (semantic JSON equality); a conflict when it
   * differs. A terminal operation stays replayable for 30 days; after that its key is free again (`retire` it first).
   */
  private async replay(
    store: StoreTransaction,
    clientId: string,
    idempotencyKey: string,
    hash: string,
    retire = false,
  ): Promise<OperationRow | undefined> {
    const existing = await store.operation.findUnique({ where: { clientId_idempotencyKey: { clientId, idempotencyKey } } });
    if (!existing) return undefined;
    const expired = existing.terminalAt !== null && this.clock.now().getTime() - existing.terminalAt.getTime() > replayWindowMs;
    if (expired) {
      // The old operation keeps its id and history; only its claim on the key ends.
      if (retire) await store.operation.update({ where: { id: existing.id }, data: { idempotencyKey: `${idempotencyKey}~retired~${existing.id}` } });
      return undefined;
    }
    if (existing.requestHash === hash) return existing;
    throw new AxonError(Code.Aborted, "IDEMPOTENCY_CONFLICT", "this idempotency key was used for another request", {
      metadata: { category: "conflict", operation_id: existing.id },
    });
  }

  private validate(input: SubmitInput) {
    const violations: FieldViolation[] = [];
    if (!idempotencyKeyPattern.test(input.idempotencyKey)) {
      violations.push({ field: "idempotency_key", description: "1-128 characters of A-Z a-z 0-9 . _ : - starting with a letter or digit" });
    }
    if (input.operation.length < 1 || input.operation.length > 128) violations.push({ field: "operation", description: "1 to 128 characters" });
    const reason = input.reason.trim();
    if (reason.length < 1 || reason.length > 2000) violations.push({ field: "reason", description: "1 to 2000 characters" });
    if (JSON.stringify(input.target).length > maxTargetBytes) violations.push({ field: "target", description: "at most 16 KiB" });
    if (JSON.stringify(input.arguments).length > maxArgumentsBytes) violations.push({ field: "arguments", description: "at most 1 MiB" });
    const provider = this.options.providers.get(input.operation);
    if (!provider && input.operation.length > 0) violations.push({ field: "operation", description: "not a registered operation type" });
    if (provider && violations.length === 0) violations.push(...provider.validate(input.target, input.arguments));
    if (violations.length > 0 || !provider) throw invalidArgument("INVALID_OPERATION", "the operation request is invalid", violations);
    return { provider, reason };
  }
}

/** Compare-and-swap on revision: the change happens only if nobody else changed the operation first. */
export async function transition(tx: StoreTransaction, operation: OperationRow, change: Partial<OperationRow>, now: Date): Promise<OperationRow | undefined> {
  const { count } = await tx.operation.updateMany({
    where: { id: operation.id, revision: operation.revision },
    data: { ...change, revision: operation.revision + 1, updatedAt: now } as never,
  });
  if (count === 0) return undefined;
  return { ...operation, ...change, revision: operation.revision + 1, updatedAt: now } as OperationRow;
}

/** Takes one use of an active window grant, atomically: only one of two concurrent takers of the last use wins. */
async function reserveGrantUse(tx: StoreTransaction, grantId: string, now: Date): Promise<boolean> {
  const grant = await tx.grant.findUnique({ where: { id: grantId } });
  if (!grant || grant.status !== "active" || (grant.usesRemaining ?? 0) < 1) return false;
  const left = (grant.usesRemaining ?? 1) - 1;
  const { count } = await tx.grant.updateMany({
    where: { id: grantId, revision: grant.revision },
    data: { usesRemaining: left, usedCount: { increment: 1 }, status: left === 0 ? "consumed" : "active", revision: { increment: 1 }, updatedAt: now },
  });
  if (count === 1) await tx.auditRecord.create({ data: { actor: grant.clientId, actorKind: "client", action: "grant.used", grantId, detail: { uses_remaining: left } } });
  return count === 1;
}

async function record(
  tx: StoreTransaction,
  kind: string,
  operation: OperationRow,
  options: { grantId?: string; actor: string; category?: string; detail?: JsonObject },
): Promise<void> {
  await tx.event.create({
    data: { kind, clientId: operation.clientId, operationId: operation.id, grantId: options.grantId ?? operation.approvalId ?? null, revision: operation.revision, payload: { state: operation.state } },
  });
  await tx.auditRecord.create({
    data: {
      actor: options.actor,
      actorKind: options.actor === "operator" || options.actor === "sweeper" ? "system" : "client",
      action: kind,
      category: options.category ?? null,
      operationId: operation.id,
      grantId: options.grantId ?? operation.approvalId ?? null,
      detail: { state: operation.state, revision: operation.revision, ...options.detail },
    },
  });
}

async function recordGrant(tx: StoreTransaction, kind: string, grant: GrantRow, actor: string): Promise<void> {
  await tx.event.create({ data: { kind, clientId: grant.clientId, grantId: grant.id, operationId: grant.operationId, revision: grant.revision, payload: { status: grant.status } } });
  await tx.auditRecord.create({
    data: { actor, actorKind: actor === "sweeper" ? "system" : "operator", action: kind, grantId: grant.id, operationId: grant.operationId, detail: { status: grant.status, revision: grant.revision } },
  });
}

/** `op_` / `req_` + 24 url-safe random characters. */
export function newId(prefix: string): string {
  return `${prefix}_${randomBytes(18).toString("base64url")}`;
}

/** Pages are newest first; the cursor is the last row's (created_at, id), opaque to clients. */
const newestFirst = [{ createdAt: "desc" as const }, { id: "desc" as const }];

function afterCursor(cursor: string | undefined) {
  if (!cursor) return {};
  const after = decodeCursor(cursor);
  return { OR: [{ createdAt: { lt: after.createdAt } }, { createdAt: after.createdAt, id: { lt: after.id } }] };
}

/** `limit` rows and, when there are more, the cursor to the next page (one extra row was fetched to know). */
function pageOf<Row extends { createdAt: Date; id: string }>(rows: Row[], limit: number): { items: Row[]; nextCursor?: string } {
  const items = rows.slice(0, limit);
  const last = items.at(-1);
  return { items, ...(rows.length > limit && last ? { nextCursor: encodeCursor(last) } : {}) };
}

function encodeCursor(row: { createdAt: Date; id: string }): string {
  return Buffer.from(JSON.stringify([row.createdAt.toISOString(), row.id])).toString("base64url");
}

function decodeCursor(cursor: string): { createdAt: Date; id: string } {
  try {
    const [createdAt, id] = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as [string, string];
    const date = new Date(createdAt);
    if (typeof id === "string" && !Number.isNaN(date.getTime())) return { createdAt: date, id };
  } catch {
    // falls through to the error below
  }
  throw invalidArgument("INVALID_CURSOR", "the cursor is not one this server gave out", [{ field: "cursor", description: "an opaque next_cursor value" }]);
}
