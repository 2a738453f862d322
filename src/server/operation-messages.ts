import { create, type JsonObject, type MessageInitShape } from "@bufbuild/protobuf";
import { operationErrorCode } from "../operations/error-codes.js";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { GrantSchema, OperationSchema } from "../gen/axon/agent/v1/agent_pb.js";
import { EventSchema, RequestSchema } from "../gen/axon/operator/v1/operator_pb.js";
import type { EventRow, GrantRow, OperationRow } from "../operations/store.js";

export const agentApiVersion = "unyolo.io/agent/v1";

/** An operation as clients see it; a list summary leaves out target, arguments and result. */
export function operationMessage(row: OperationRow, options: { summary?: boolean } = {}) {
  return create(OperationSchema, {
    apiVersion: agentApiVersion,
    id: row.id,
    clientId: row.clientId,
    idempotencyKey: row.idempotencyKey,
    operation: row.operation,
    reason: row.reason,
    state: row.state,
    revision: row.revision,
    createdAt: timestampFromDate(row.createdAt),
    updatedAt: timestampFromDate(row.updatedAt),
    presentation: { title: row.presentationTitle, summary: row.presentationSummary },
    approvalId: row.approvalId ?? "",
    ...(row.terminalAt ? { terminalAt: timestampFromDate(row.terminalAt) } : {}),
    ...(options.summary
      ? {}
      : {
          target: row.target as JsonObject,
          arguments: row.arguments as JsonObject,
          ...(row.result ? { result: row.result as JsonObject } : {}),
        }),
    ...(row.errorCode ? { error: { code: operationErrorCode(row.errorCode), message: row.errorMessage ?? "" } } : {}),
    recoveredBy: row.recoveredBy ?? "",
  });
}

/** An approval request as operators see it, with the operation that asked for it when there is one. */
export function requestMessage(grant: GrantRow, linked?: OperationRow): MessageInitShape<typeof RequestSchema> {
  return { ...grantFields(grant), ...(linked ? { linkedOperation: operationMessage(linked) } : {}) };
}

/** A grant as its client sees it (the operator's request, without the linked operation). */
export function grantMessage(grant: GrantRow): MessageInitShape<typeof GrantSchema> {
  return grantFields(grant);
}

function grantFields(grant: GrantRow) {
  return {
    id: grant.id,
    revision: grant.revision,
    clientId: grant.clientId,
    status: grant.status,
    operation: grant.operation,
    target: grant.target as JsonObject,
    reason: grant.reason,
    mode: grant.mode,
    usedCount: grant.usedCount,
    clientRequestId: grant.clientRequestId ?? "",
    createdAt: timestampFromDate(grant.createdAt),
    updatedAt: timestampFromDate(grant.updatedAt),
    ...(grant.minutes != null ? { minutes: grant.minutes } : {}),
    ...(grant.maxUses != null ? { maxUses: grant.maxUses } : {}),
    ...(grant.usesRemaining != null ? { usesRemaining: grant.usesRemaining } : {}),
    ...(grant.expiresAt ? { expiresAt: timestampFromDate(grant.expiresAt) } : {}),
  };
}

/** One event of the operator feed, for WatchEvents and for Server-Sent Events alike. */
export function eventMessage(event: EventRow) {
  return create(EventSchema, {
    seq: BigInt(event.seq),
    kind: event.kind,
    requestId: event.grantId ?? "",
    operationId: event.operationId ?? "",
    revision: event.revision ?? 0,
    createdAt: timestampFromDate(event.createdAt),
  });
}
