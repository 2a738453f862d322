import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { AgentOperationsService } from "../gen/axon/agent/v1/agent_pb.js";
import { terminalStates, type OperationsBroker } from "../operations/broker.js";
import type { OperationRow } from "../operations/store.js";
import { httpStatusKey, principalKey } from "./context.js";
import { agentApiVersion, grantMessage, operationMessage } from "./operation-messages.js";

export interface Descriptor {
  contractDigest: string;
  buildId: string;
  /** The operation types a client may submit. */
  operationsFor(clientId: string): string[];
}

/** Agent Operations V1: protobuf in, broker calls, protobuf out; the caller is always the authenticated client. */
export function agentOperationsService(broker: OperationsBroker, descriptor: Descriptor): ServiceImpl<typeof AgentOperationsService> {
  return {
    getDescriptor(_request, context) {
      return {
        descriptor: {
          apiVersion: agentApiVersion,
          contractDigest: descriptor.contractDigest,
          buildId: descriptor.buildId,
          operations: descriptor.operationsFor(clientOf(context)),
        },
      };
    },

    async submitOperation(request, context) {
      const { operation, created } = await broker.submit(clientOf(context), {
        idempotencyKey: request.idempotencyKey,
        operation: request.operation,
        target: request.target ?? {},
        arguments: request.arguments ?? {},
        reason: request.reason,
      });
      // 202 for a new operation still under way; 200 for a replay or one already terminal (e.g. denied).
      if (created && !terminalStates.has(operation.state)) context.values.set(httpStatusKey, 202);
      return { operation: answered(operation, context) };
    },

    async listOperations(request, context) {
      const page = await broker.list(clientOf(context), request);
      return {
        operations: page.operations.map((row) => operationMessage(row, { summary: true })),
        nextCursor: page.nextCursor ?? "",
      };
    },

    async getOperation(request, context) {
      return { operation: answered(await broker.get(clientOf(context), request.id), context) };
    },

    async waitOperation(request, context) {
      const operation = await broker.wait(clientOf(context), request.id, request.afterRevision, request.waitSeconds, context.signal);
      return { operation: answered(operation, context) };
    },

    async *watchOperation(request, context) {
      for await (const operation of broker.watch(clientOf(context), request.id, request.afterRevision, context.signal)) {
        yield { operation: operationMessage(operation) };
      }
    },

    // Every event of the operations feed that is about one of the caller's operations, as that operation now is.
    async *watchOperations(_request, context) {
      const client = clientOf(context);
      for await (const event of broker.events(undefined, context.signal)) {
        if (event.clientId !== client || !event.operationId) continue;
        yield { operation: operationMessage(await broker.get(client, event.operationId), { summary: true }) };
      }
    },

    async createGrant(request, context) {
      const { grant, created } = await broker.createGrant(clientOf(context), {
        clientRequestId: request.clientRequestId,
        operation: request.operation,
        target: request.target ?? {},
        reason: request.reason,
        ...(request.minutes !== undefined ? { minutes: request.minutes } : {}),
        ...(request.maxUses !== undefined ? { maxUses: request.maxUses } : {}),
      });
      if (created) context.values.set(httpStatusKey, 201);
      return { grant: grantMessage(grant) };
    },

    async listGrants(request, context) {
      const page = await broker.listGrants(clientOf(context), request);
      return { grants: page.grants.map(grantMessage), nextCursor: page.nextCursor ?? "" };
    },

    async getGrant(request, context) {
      return { grant: grantMessage(await broker.getGrant(clientOf(context), request.id)) };
    },

    async cancelOperation(request, context) {
      return { operation: answered(await broker.cancel(clientOf(context), request.id), context) };
    },
  };
}

function clientOf(context: HandlerContext): string {
  return context.values.get(principalKey)!.name;
}

/** Every answer carrying an operation still under way says where to poll and when. */
function answered(operation: OperationRow, context: HandlerContext) {
  if (!terminalStates.has(operation.state)) {
    context.responseHeader.set("location", `/api/agent/v1/operations/${operation.id}`);
    context.responseHeader.set("retry-after", "2");
  }
  return operationMessage(operation);
}

