import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { OperatorService } from "../gen/axon/operator/v1/operator_pb.js";
import type { OperationsBroker } from "../operations/broker.js";
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
      return answer(
        await broker.approve(operatorOf(context), request.id, {
          expectedRevision: request.expectedRevision,
          reason: request.reason,
          ...(request.minutes !== undefined ? { minutes: request.minutes } : {}),
          ...(request.maxUses !== undefined ? { max_uses: request.maxUses } : {}),
        }),
      );
    },

    async denyRequest(request, context) {
      return answer(await broker.deny(operatorOf(context), request.id, { expectedRevision: request.expectedRevision, reason: request.reason }));
    },

    async revokeRequest(request, context) {
      return answer(await broker.revoke(operatorOf(context), request.id, { expectedRevision: request.expectedRevision, reason: request.reason }));
    },

    async *watchEvents(request, context) {
      for await (const event of broker.events(request.afterSeq, context.signal)) yield { event: eventMessage(event) };
    },
  };
}

function operatorOf(context: HandlerContext): string {
  return context.values.get(principalKey)!.name;
}
