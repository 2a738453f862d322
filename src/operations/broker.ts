import type { Logger } from "../logger.js";
import type { AdmissionLimits } from "./admission.js";
import type { ApprovalAnnouncer } from "./approval-webhooks.js";
import { AuditBatch } from "./audit-batch.js";
import { systemClock, type Clock } from "./clock.js";
import { Decisions, type ApprovalInput, type DecisionInput } from "./decisions.js";
import { Grants, type GrantInput } from "./grants.js";
import { newId } from "./lifecycle.js";
import { NativeCalls } from "./native-calls.js";
import type { Notifier } from "./notifier.js";
import { OwnOperations } from "./own-operations.js";
import type { Policy } from "./policy.js";
import type { ProviderRegistry } from "./providers/registry.js";
import type { StoreClient } from "./store.js";
import { Submissions, type SubmitInput } from "./submission.js";
import { Waits } from "./waits.js";

export { newId, terminalStates } from "./lifecycle.js";
export type { Clock } from "./clock.js";
export type { GrantInput } from "./grants.js";
export type { SubmitInput } from "./submission.js";

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
  /** This replica (its worker's lease): the native calls it holds end with it. */
  replicaId?: string;
  /** Tells the operators' webhooks of every new pending request. */
  announcer?: Pick<ApprovalAnnouncer, "announce">;
}

/**
 * The operations lifecycle as the services see it: identity is already established; submission (validation,
 * idempotent replay, admission, policy), the requester's reads and cancel, waits, explicit grants and operator
 * decisions, each a compare-and-swap on `revision`. It knows nothing of HTTP or gRPC; each concern lives in its file.
 */
export class OperationsBroker {
  /** Native routes (Git, /v1, held tool calls) are decided here, by the same policy, grants and approvals. */
  readonly native: NativeCalls;
  private readonly submissions: Submissions;
  private readonly operations: OwnOperations;
  private readonly waits: Waits;
  private readonly grants: Grants;
  private readonly decisions: Decisions;

  constructor(options: BrokerOptions) {
    const clock = options.clock ?? systemClock;
    const approvalTtlMs = (options.approvalTtlMinutes ?? 60) * 60_000;
    const { store, notifier } = options;
    this.submissions = new Submissions({ ...options, clock, approvalTtlMs });
    this.operations = new OwnOperations({ store, notifier, clock });
    this.waits = new Waits({ store, notifier, operations: this.operations });
    this.grants = new Grants({ ...options, clock, approvalTtlMs });
    this.decisions = new Decisions({ store, notifier, clock });
    const audit = new AuditBatch({ store, logger: options.logger });
    const holder = options.replicaId ?? newId("replica");
    this.native = new NativeCalls({ ...options, clock, approvalTtlMs, submissions: this.submissions, grants: this.grants, holder, audit });
  }

  submit(clientId: string, input: SubmitInput) {
    return this.submissions.submit(clientId, input);
  }

  get(clientId: string, id: string) {
    return this.operations.get(clientId, id);
  }

  list(clientId: string, query: { idempotencyKey?: string; state?: string; limit?: number; cursor?: string }) {
    return this.operations.list(clientId, query);
  }

  cancel(clientId: string, id: string) {
    return this.operations.cancel(clientId, id);
  }

  wait(clientId: string, id: string, afterRevision: number, waitSeconds: number | undefined, signal?: AbortSignal) {
    return this.waits.wait(clientId, id, afterRevision, waitSeconds, signal);
  }

  watch(clientId: string, id: string, afterRevision: number, signal: AbortSignal) {
    return this.waits.watch(clientId, id, afterRevision, signal);
  }

  events(afterSeq: bigint | number | undefined, signal: AbortSignal) {
    return this.waits.events(afterSeq, signal);
  }

  /** What operators follow: the open requests' events first unless they resume after `afterSeq`, then live. */
  operatorFeed(afterSeq: bigint | number | undefined, signal: AbortSignal) {
    return this.waits.operatorFeed(afterSeq, signal);
  }

  createGrant(clientId: string, input: GrantInput) {
    return this.grants.create(clientId, input);
  }

  getGrant(clientId: string, id: string) {
    return this.grants.get(clientId, id);
  }

  listGrants(clientId: string, query: { status?: string; limit?: number; cursor?: string }) {
    return this.grants.list(clientId, query);
  }

  getRequest(id: string) {
    return this.decisions.getRequest(id);
  }

  listRequests(operator: string, query: { status?: string; requester?: string; operation?: string; limit?: number; cursor?: string }) {
    return this.decisions.listRequests(operator, query);
  }

  approve(operator: string, id: string, decision: ApprovalInput) {
    return this.decisions.approve(operator, id, decision);
  }

  deny(operator: string, id: string, decision: DecisionInput) {
    return this.decisions.deny(operator, id, decision);
  }

  revoke(operator: string, id: string, decision: DecisionInput) {
    return this.decisions.revoke(operator, id, decision);
  }

  /** Expires pending approvals and window grants past their time. Safe to run on several replicas at once. */
  sweep() {
    return this.decisions.sweep();
  }
}
