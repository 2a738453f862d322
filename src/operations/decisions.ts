import type { JsonObject } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { isJsonObject } from "../json.js";
import { AxonError, invalidArgument, notFound } from "../errors.js";
import type { Clock } from "./clock.js";
import { isUniqueViolation } from "../store/storage-errors.js";
import { requestHash } from "./canonical-json.js";
import { record, recordGrant, transition } from "./lifecycle.js";
import type { Notifier } from "./notifier.js";
import { afterCursor, newestFirst, pageLimit, pageOf } from "./pages.js";
import { narrowGrant, type GrantTermsInput } from "./policy.js";
import type { GrantRow, OperationRow, StoreClient, StoreTransaction } from "./store.js";
import { idempotencyKeyPattern } from "./submission.js";
import { traceOperatorDecision } from "../telemetry/operation-spans.js";

export interface DecisionOptions {
  store: StoreClient;
  notifier: Notifier;
  clock: Clock;
}

type Decided = { grant: GrantRow; operation?: OperationRow };

/** What every decision carries; with `idempotencyKey` the same decision again answers the same request. */
export interface DecisionInput {
  expectedRevision: number;
  reason?: string;
  idempotencyKey?: string;
}

/** An approval may also say what a held call goes ahead with, where the call allows an operator to edit it. */
export interface ApprovalInput extends DecisionInput, GrantTermsInput {
  arguments?: JsonObject;
}

/** Writes, inside a decision's transaction, that its key names it. */
type RememberKey = (tx: StoreTransaction) => Promise<unknown>;

/**
 * Operator decisions on requests (approve, deny, revoke) and the clock's (expiry): each one transaction that drives
 * the linked operations (spec §3), then changes the grant by a compare-and-swap on its revision, and notifies after
 * commit. Operations always change before their grant: the order every writer takes the rows in (a submission using
 * a window grant locks the client's and the server's load rows, then the grant), so no two of them deadlock.
 */
export class Decisions {
  constructor(private readonly options: DecisionOptions) {}

  async getRequest(id: string): Promise<Decided> {
    const { store } = this.options;
    const grant = await store.grant.findUnique({ where: { id } });
    if (!grant) throw notFound("REQUEST_NOT_FOUND", "request not found", { request_id: id });
    const operation = grant.operationId ? await store.operation.findUnique({ where: { id: grant.operationId } }) : null;
    return { grant, ...(operation ? { operation } : {}) };
  }

  /** The requests an operator pages through; `operator` owns the cursors. */
  async listRequests(operator: string, query: { status?: string; requester?: string; operation?: string; limit?: number; cursor?: string }) {
    const { store } = this.options;
    const limit = pageLimit(query.limit, 50, 100);
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
    const rows = await store.grant.findMany({
      where: {
        ...(only ? { status: { in: only } } : {}),
        ...(query.requester ? { clientId: query.requester } : {}),
        ...(query.operation ? { operation: query.operation } : {}),
        ...(await afterCursor(query.cursor, operator, (cursorId) => store.grant.findUnique({ where: { id: cursorId }, select: { id: true, createdAt: true } }))),
      },
      orderBy: newestFirst,
      take: limit + 1,
    });
    const { items, nextCursor } = pageOf(rows, limit, operator);
    return { requests: items, ...(nextCursor ? { nextCursor } : {}) };
  }

  /** Approves a pending request, possibly narrowing it; its operation becomes approved with one use reserved. */
  approve(operator: string, id: string, decision: ApprovalInput): Promise<Decided> {
    return this.keyed(operator, id, "approve", decision, (remember) => this.decide(operator, id, decision.expectedRevision, "pending", remember, async (tx, grant, now, changed) => {
      const edit = decision.arguments === undefined ? {} : { arguments: await editedArguments(tx, grant, decision.arguments) };
      const terms = narrowGrant({ mode: grant.mode as "window" | "execution", ...(grant.minutes != null ? { minutes: grant.minutes } : {}), maxUses: grant.maxUses ?? 1 }, decision);
      const usesRemaining = terms.maxUses - (grant.operationId ? 1 : 0);
      await driveLinkedOperation(tx, grant, now, { state: "approved", ...edit }, changed);
      const approved = await changeGrant(tx, grant, now, {
        status: usesRemaining > 0 ? "active" : "consumed",
        mode: terms.mode,
        minutes: terms.minutes ?? null,
        maxUses: terms.maxUses,
        usesRemaining,
        usedCount: grant.operationId ? 1 : 0,
        expiresAt: terms.minutes ? new Date(now.getTime() + terms.minutes * 60_000) : null,
        decidedBy: operator,
        decisionReason: decision.reason ?? null,
      });
      await recordGrant(tx, "request.approved", approved, operator);
      return approved;
    }));
  }

  deny(operator: string, id: string, decision: DecisionInput): Promise<Decided> {
    return this.keyed(operator, id, "deny", decision, (remember) => this.decide(operator, id, decision.expectedRevision, "pending", remember, async (tx, grant, now, changed) => {
      await driveLinkedOperation(tx, grant, now, { state: "denied", terminalAt: now, errorCode: "operation_approval_denied", errorMessage: "an operator denied the request" }, changed);
      const denied = await changeGrant(tx, grant, now, { status: "denied", decidedBy: operator, decisionReason: decision.reason ?? null });
      await recordGrant(tx, "request.denied", denied, operator);
      return denied;
    }));
  }

  /** Revokes an active grant; operations it approved that have not started are canceled. */
  revoke(operator: string, id: string, decision: DecisionInput): Promise<Decided> {
    return this.keyed(operator, id, "revoke", decision, (remember) => this.decide(operator, id, decision.expectedRevision, "active", remember, async (tx, grant, now, changed) => {
      const waiting = await tx.operation.findMany({ where: { approvalId: id, state: "approved" } });
      for (const operation of waiting) {
        const canceled = await transition(tx, operation, { state: "canceled", terminalAt: now, errorCode: "operation_canceled", errorMessage: "an operator revoked the grant" }, now);
        if (canceled) changed.push(canceled);
      }
      const revoked = await changeGrant(tx, grant, now, { status: "revoked", decidedBy: operator, decisionReason: decision.reason ?? null });
      await recordGrant(tx, "request.revoked", revoked, operator);
      return revoked;
    }));
  }

  /** Expires pending approvals and window grants past their time. Safe to run on several replicas at once. */
  async sweep(): Promise<number> {
    const { store, clock } = this.options;
    const now = clock.now();
    const due = await store.grant.findMany({ where: { status: { in: ["pending", "active"] }, expiresAt: { lte: now } }, take: 100 });
    let expired = 0;
    for (const grant of due) {
      const changed: OperationRow[] = [];
      const done = await store
        .transaction(async (tx) => {
          if (grant.status === "pending") {
            const change = { state: "expired", terminalAt: now, errorCode: "operation_approval_expired", errorMessage: "the request was not decided in time" };
            await driveLinkedOperation(tx, grant, now, change, changed);
          }
          const gone = await changeGrant(tx, grant, now, { status: "expired" });
          await recordGrant(tx, "request.expired", gone, "sweeper");
          return true;
        })
        // Another replica expired it first, or an operator decided it meanwhile.
        .catch((error: unknown) => (error instanceof GrantChanged ? false : Promise.reject(error)));
      if (done) expired++;
      this.notifyCommitted(changed);
    }
    return expired;
  }

  /**
   * A decision made at most once per operator and idempotency key: the same decision again (same action, request,
   * expected revision, reason and terms) answers the request as it is now, whatever happened to it since; another
   * decision with the key is IDEMPOTENCY_CONFLICT. The key is written in the decision's own transaction, so a decision
   * refused (stale, not pending) leaves it free, and of concurrent twins all but the first replay it.
   */
  private keyed(operator: string, id: string, action: string, decision: DecisionInput & GrantTermsInput, run: (remember: RememberKey) => Promise<Decided>): Promise<Decided> {
    return traceOperatorDecision(action, () => this.keyedDecision(operator, id, action, decision, run));
  }

  private async keyedDecision(operator: string, id: string, action: string, decision: DecisionInput & GrantTermsInput, run: (remember: RememberKey) => Promise<Decided>): Promise<Decided> {
    const { idempotencyKey: key, ...terms } = decision;
    if (key === undefined || key === "") return run(async () => undefined);
    if (!idempotencyKeyPattern.test(key)) {
      throw invalidArgument("INVALID_IDEMPOTENCY_KEY", "not an idempotency key", [{ field: "idempotency_key", description: "1-128 characters of A-Z a-z 0-9 . _ : - starting with a letter or digit" }]);
    }
    const { store } = this.options;
    const decisionHash = requestHash({ action, request_id: id, ...terms });
    for (let attempt = 1; ; attempt++) {
      const earlier = await store.decisionKey.findUnique({ where: { operator_key: { operator, key } } });
      if (earlier) {
        if (earlier.decisionHash !== decisionHash) {
          throw new AxonError(Code.Aborted, "IDEMPOTENCY_CONFLICT", "this idempotency key was used for another decision", {
            metadata: { category: "conflict", request_id: earlier.requestId },
          });
        }
        return this.getRequest(earlier.requestId);
      }
      try {
        return await run((tx) => tx.decisionKey.create({ data: { operator, key, requestId: id, decisionHash } }));
      } catch (error) {
        // A concurrent twin decided first (the request moved on, or its key beat ours): its key is committed with its
        // decision, so the next round answers as it does. Without a twin, the refusal stands.
        const raced = isUniqueViolation(error) || (error instanceof AxonError && error.code === Code.Aborted);
        if (!raced || attempt === 2) throw error;
      }
    }
  }

  private async decide(
    operator: string,
    id: string,
    expectedRevision: number,
    requiredStatus: string,
    remember: RememberKey,
    apply: (tx: StoreTransaction, grant: GrantRow, now: Date, changed: OperationRow[]) => Promise<GrantRow>,
  ): Promise<Decided> {
    const { store, clock } = this.options;
    const changed: OperationRow[] = [];
    const decided = await store
      .transaction(async (tx) => {
        const grant = await tx.grant.findUnique({ where: { id } });
        if (!grant) throw notFound("REQUEST_NOT_FOUND", "request not found", { request_id: id });
        if (grant.revision !== expectedRevision) throw staleRevision(grant);
        if (grant.status !== requiredStatus) {
          throw new AxonError(Code.Aborted, requiredStatus === "pending" ? "REQUEST_NOT_PENDING" : "REQUEST_NOT_ACTIVE", `the request is ${grant.status}`, {
            metadata: { category: "conflict", status: grant.status },
          });
        }
        const decided = await apply(tx, grant, clock.now(), changed);
        await remember(tx);
        return decided;
      })
      .catch(async (error: unknown) => {
        // Decided by someone else between the read and the write: as stale as if read after it.
        if (error instanceof GrantChanged) throw staleRevision((await store.grant.findUnique({ where: { id } })) ?? error.grant);
        throw error;
      });
    this.notifyCommitted(changed);
    const operation = decided.operationId ? await store.operation.findUnique({ where: { id: decided.operationId } }) : null;
    return { grant: decided, ...(operation ? { operation } : {}) };
  }

  /** Wakes waiters for the operations a transaction changed, once it has committed (never for one rolled back). */
  private notifyCommitted(changed: OperationRow[]): void {
    for (const operation of changed) this.options.notifier.rowChanged(operation);
  }
}

class GrantChanged extends Error {
  constructor(readonly grant: GrantRow) {
    super("the grant changed");
  }
}

function staleRevision(grant: GrantRow): AxonError {
  return new AxonError(Code.Aborted, "STALE_REVISION", "the request changed since it was read", {
    metadata: { category: "conflict", current_revision: String(grant.revision) },
  });
}

/** Compare-and-swap on the grant's revision; `GrantChanged` (rolling the transaction back) when it moved on. */
async function changeGrant(tx: StoreTransaction, grant: GrantRow, now: Date, change: Partial<GrantRow>): Promise<GrantRow> {
  const { count } = await tx.grant.updateMany({
    where: { id: grant.id, revision: grant.revision },
    data: { ...change, revision: grant.revision + 1, updatedAt: now } as never,
  });
  if (count === 0) throw new GrantChanged(grant);
  return { ...grant, ...change, revision: grant.revision + 1, updatedAt: now };
}

/**
 * The linked call's arguments with the operator's in place of the ones it asked for: only for a held call whose detail
 * lists "edit" among its `allowed_decisions`.
 */
async function editedArguments(tx: StoreTransaction, grant: GrantRow, edited: JsonObject): Promise<JsonObject> {
  const operation = grant.operationId ? await tx.operation.findUnique({ where: { id: grant.operationId } }) : null;
  const detail = operation?.arguments;
  const allowed = isJsonObject(detail) && Array.isArray(detail.allowed_decisions) && detail.allowed_decisions.includes("edit");
  if (!allowed) {
    throw invalidArgument("ARGUMENTS_NOT_EDITABLE", "this request does not let an operator change its arguments", [
      { field: "arguments", description: "only for a held call that allows the edit decision" },
    ]);
  }
  return { ...(detail as JsonObject), arguments: edited };
}

/** The linked approval drives its operation (spec §3). */
async function driveLinkedOperation(tx: StoreTransaction, grant: GrantRow, now: Date, change: Partial<OperationRow>, changed: OperationRow[]): Promise<void> {
  if (!grant.operationId) return;
  const operation = await tx.operation.findUnique({ where: { id: grant.operationId } });
  if (!operation || operation.state !== "pending") return;
  const updated = await transition(tx, operation, change, now);
  if (updated) {
    changed.push(updated);
    await record(tx, `operation.${updated.state}`, updated, { grantId: grant.id, actor: "operator" });
  }
}
