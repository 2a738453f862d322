import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { invalidArgument } from "../errors.js";
import type { ApproveRequestRequest, OperatorService } from "../gen/axon/operator/v1/operator_pb.js";
import type { OperationsBroker } from "../operations/broker.js";
import type { DecisionInput } from "../operations/decisions.js";
import type { GrantTermsInput } from "../operations/policy.js";
import type { GrantRow, OperationRow } from "../operations/store.js";
import { principalKey } from "./context.js";
import { eventMessage, requestMessage } from "./operation-messages.js";

/** What operators do: look at requests, approve (possibly narrowing), deny, revoke, follow the feed. */
export function operatorService(broker: OperationsBroker): ServiceImpl<typeof OperatorService> {
  const answer = ({ grant, operation }: { grant: GrantRow; operation?: OperationRow }) => ({ request: requestMessage(grant, operation) });
  return {
    async listRequests(request, context) {
      const page = await broker.listRequests(operatorOf(context), request);
      return { requests: page.requests.map((grant) => requestMessage(grant)), nextCursor: page.nextCursor ?? "" };
    },

    async getRequest(request) {
      return answer(await broker.getRequest(request.id));
    },

    async approveRequest(request, context) {
      const edited = request.arguments === undefined ? {} : { arguments: request.arguments };
      return answer(await broker.approve(operatorOf(context), request.id, { ...decisionOf(request), ...approvalTerms(request), ...edited }));
    },

    async denyRequest(request, context) {
      return answer(await broker.deny(operatorOf(context), request.id, decisionOf(request)));
    },

    async revokeRequest(request, context) {
      return answer(await broker.revoke(operatorOf(context), request.id, decisionOf(request)));
    },

    async *watchEvents(request, context) {
      for await (const event of broker.operatorFeed(request.afterSeq, context.signal)) yield { event: eventMessage(event) };
    },
  };
}

function decisionOf(request: { expectedRevision: number; reason: string; idempotencyKey: string }): DecisionInput {
  return { expectedRevision: request.expectedRevision, reason: request.reason, ...(request.idempotencyKey ? { idempotencyKey: request.idempotencyKey } : {}) };
}

/**
 * How an approval narrows the request, in Axon's form (`minutes`, `max_uses`) or unYOLO's (`constraints`), never both.
 * unYOLO counts a window in seconds, Axon's grants in minutes: a duration is rounded down, so it only ever narrows.
 */
function approvalTerms(request: ApproveRequestRequest): GrantTermsInput {
  const { constraints } = request;
  if (constraints === undefined) {
    return { ...(request.minutes !== undefined ? { minutes: request.minutes } : {}), ...(request.maxUses !== undefined ? { max_uses: request.maxUses } : {}) };
  }
  if (request.minutes !== undefined || request.maxUses !== undefined) {
    throw invalidArgument("CONFLICTING_TERMS", "give constraints or minutes and max_uses, not both", [
      { field: "constraints", description: "not together with minutes or max_uses" },
    ]);
  }
  const seconds = constraints.durationSeconds;
  if (seconds !== undefined && seconds < 60) {
    throw invalidArgument("INVALID_GRANT_DECISION", "a window lasts at least 60 seconds", [{ field: "constraints.duration_seconds", description: "at least 60" }]);
  }
  return {
    ...(seconds !== undefined ? { minutes: Math.floor(seconds / 60) } : {}),
    ...(constraints.maxUses !== undefined ? { max_uses: constraints.maxUses } : {}),
  };
}

function operatorOf(context: HandlerContext): string {
  return context.values.get(principalKey)!.name;
}
