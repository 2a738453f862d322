import type { JsonObject } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { AxonError, invalidArgument, notFound, type FieldViolation } from "../errors.js";
import { isUniqueViolation } from "../store/storage-errors.js";
import { admit, admissionError, limitsFor, windowStartOf } from "./admission.js";
import { jsonBytes, requestHash } from "./canonical-json.js";
import { isReasonLength, newId, recordGrant } from "./lifecycle.js";
import { afterCursor, newestFirst, pageLimit, pageOf } from "./pages.js";
import { decide, requestedGrantTerms, type GrantTerms } from "./policy.js";
import type { GrantRow } from "./store.js";
import { idempotencyKeyPattern, maxTargetBytes, pendingTerms, type RequestOptions } from "./submission.js";
import { admitClient, readAdmissionCounts } from "./submission-store.js";

export interface GrantInput {
  clientRequestId: string;
  operation: string;
  target: JsonObject;
  reason: string;
  minutes?: number;
  maxUses?: number;
}

/** A pending grant request as written: what it asks for, and what replays it. */
export interface PendingGrant {
  operation: string;
  target: JsonObject;
  reason: string;
  terms: GrantTerms;
  requestHash: string;
  clientRequestId: string | null;
}

class AdmissionChanged extends Error {}

/** Explicit grants (spec §1): a window grant asked for ahead of use, and the client's view of its grants. */
const grantStatuses = new Set(["pending", "active", "denied", "expired", "consumed", "revoked", "canceled", "failed"]);

export class Grants {
  constructor(private readonly options: RequestOptions) {}

  /**
   * Asks ahead of use for a window grant that matching operations will then use: policy-checked, admitted like a
   * submission, and pending until an operator decides. Idempotent by `client_request_id`.
   */
  async create(clientId: string, input: GrantInput): Promise<{ grant: GrantRow; created: boolean }> {
    const { policy, providers, clock } = this.options;
    const violations: FieldViolation[] = [];
    if (!idempotencyKeyPattern.test(input.clientRequestId)) violations.push({ field: "client_request_id", description: "1-128 characters of A-Z a-z 0-9 . _ : -" });
    const provider = providers.get(input.operation);
    if (!provider) violations.push({ field: "operation", description: "not a registered operation type" });
    // A native operation's grant is asked for by its target alone: its route brings the rest with each call.
    if (provider?.native) violations.push(...provider.validate(input.target, {}, clientId));
    const reason = input.reason.trim();
    if (!isReasonLength(reason)) violations.push({ field: "reason", description: "1 to 2000 characters" });
    if (jsonBytes(input.target) > maxTargetBytes) violations.push({ field: "target", description: "at most 16 KiB of UTF-8 JSON" });
    if (violations.length > 0) throw invalidArgument("INVALID_GRANT", "the grant request is invalid", violations);

    const asked = { minutes: input.minutes ?? null, max_uses: input.maxUses ?? null };
    const hash = requestHash({ operation: input.operation, target: input.target, reason, ...asked });
    const decision = decide(policy, { clientId, operation: input.operation, target: input.target, now: clock.now() }, []);
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

    return this.createPending(clientId, { operation: input.operation, target: input.target, reason, terms, requestHash: hash, clientRequestId: input.clientRequestId });
  }

  /**
   * Writes a pending request for a window grant, admitted like a submission, or replays the one its
   * `clientRequestId` names. Without a `clientRequestId` (a native call's request), every call writes a new one.
   */
  async createPending(clientId: string, request: PendingGrant): Promise<{ grant: GrantRow; created: boolean }> {
    const { store, clock, notifier } = this.options;
    const now = clock.now();
    const clientLimits = limitsFor(this.options.admission, clientId);
    const limits = { ...clientLimits, windowStart: windowStartOf(now, clientLimits.windowSeconds) };
    for (;;) {
      try {
        const result = await store.transaction(async (tx) => {
          const existing =
            request.clientRequestId === null
              ? null
              : await tx.grant.findUnique({ where: { clientId_clientRequestId: { clientId, clientRequestId: request.clientRequestId } } });
          if (existing) {
            if (existing.requestHash === request.requestHash) return { grant: existing, created: false };
            throw new AxonError(Code.Aborted, "IDEMPOTENCY_CONFLICT", "this client_request_id was used for another request", {
              metadata: { category: "conflict", request_id: existing.id },
            });
          }
          if (!(await admitClient(store, tx, clientId, limits))) {
            const refusal = admit(this.options.admission, clientId, await readAdmissionCounts(store, tx, clientId, limits.windowStart), now, limits.windowStart);
            // Room again by the time the counts were read (an operation finished): the next round takes it.
            throw refusal.admitted ? new AdmissionChanged() : admissionError(refusal);
          }
          const grant = await tx.grant.create({
            data: {
              id: newId("req"),
              revision: 1,
              clientId,
              operation: request.operation,
              target: request.target,
              reason: request.reason,
              ...pendingTerms(request.terms, now, this.options.approvalTtlMs),
              clientRequestId: request.clientRequestId,
              requestHash: request.requestHash,
              createdAt: now,
              updatedAt: now,
            },
          });
          await recordGrant(tx, "request.created", grant, clientId);
          return { grant, created: true };
        });
        if (result.created) {
          notifier.changed(result.grant.id);
          this.options.announcer?.announce({ grant: result.grant });
        }
        return result;
      } catch (error) {
        // The same client_request_id created concurrently: the next round replays it.
        if (!isUniqueViolation(error) && !(error instanceof AdmissionChanged)) throw error;
      }
    }
  }

  async get(clientId: string, id: string): Promise<GrantRow> {
    const grant = await this.options.store.grant.findFirst({ where: { id, clientId } });
    if (!grant) throw notFound("GRANT_NOT_FOUND", "grant not found", { grant_id: id });
    return grant;
  }

  async list(clientId: string, query: { status?: string; limit?: number; cursor?: string }) {
    const { store } = this.options;
    const limit = pageLimit(query.limit, 20, 50);
    if (query.status && !grantStatuses.has(query.status)) {
      throw invalidArgument("INVALID_STATUS", "unknown grant status", [{ field: "status", description: [...grantStatuses].join(", ") }]);
    }
    const after = await afterCursor(query.cursor, clientId, (id) => store.grant.findFirst({ where: { id, clientId }, select: { id: true, createdAt: true } }));
    const rows = await store.grant.findMany({
      where: { clientId, ...(query.status ? { status: query.status } : {}), ...after },
      orderBy: newestFirst,
      take: limit + 1,
    });
    const { items, nextCursor } = pageOf(rows, limit, clientId);
    return { grants: items, ...(nextCursor ? { nextCursor } : {}) };
  }
}
