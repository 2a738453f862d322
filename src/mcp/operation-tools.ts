import type { JsonObject } from "@bufbuild/protobuf";
import * as z from "zod";
import { AxonError } from "../errors.js";
import type { Logger } from "../logger.js";
import { newId, terminalStates, type OperationsBroker } from "../operations/broker.js";
import { operationPageSchema, operationProjectionSchema, operationStates, projectOperation, projectPage } from "./projection.js";
import { defineTool, errorResult, structuredResult, toolErrorOf, type ToolDefinition } from "./tool-results.js";

/** What the operation tools need of one authenticated client's session. */
export interface OperationToolsContext {
  clientId: string;
  broker: Pick<OperationsBroker, "submit" | "get" | "list" | "wait" | "cancel">;
  logger: Logger;
}

export const lifecycleToolNames = ["operation_get", "operation_wait", "operation_list", "operation_cancel"] as const;

/** `agent.chat` -> `agent_chat` (spec §9). */
export function operationToolName(operation: string): string {
  return operation.replaceAll(".", "_");
}

const maxWaitSeconds = 25;
// The broker wakes waiters on changes made in this process only; another process on the same database (a replica,
// the stdio CLI next to a server) is seen by re-reading this often.
const crossProcessPollSeconds = 2;

// What each shipped provider takes (spec §8); the provider validates, this only tells the model.
const operationHints: Record<string, string> = {
  "agent.chat": "Runs a hosted agent network as a long-running operation. target {network}, arguments {text, sly_data?}; result {text, structure?, sly_data?}.",
  "http.request":
    "Calls an HTTP API with a credential configured on the server (the secret is never shown). target {credential, path}, " +
    "arguments {method, query?, headers?, body?}; result {status, headers, body, truncated}. Usually needs an operator's approval first.",
};

const operationId = z.string().min(1).max(128).describe("The operation's id (op_...).");
const jsonObject = z.record(z.string(), z.unknown());

const submitInput = z.strictObject({
  target: jsonObject.describe("What the operation acts on; its fields depend on the operation type."),
  reason: z.string().min(1).max(2000).describe("Why, in a sentence an operator approving it will read."),
  request_id: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/)
    .optional()
    .describe("Idempotency key: a retry with the same request_id and the same request returns the same operation. Generated (req_...) when absent."),
  arguments: jsonObject.describe("The operation's arguments; their fields depend on the operation type."),
});

/** One tool per operation type the client may use: it submits and returns at once, never waiting for the outcome. */
export function operationTool(operation: string, context: OperationToolsContext): ToolDefinition {
  const { clientId, broker, logger } = context;
  return defineTool({
    name: operationToolName(operation),
    title: `Submit ${operation}`,
    description:
      `Submits the operation ${operation} and returns it at once (usually pending or approved); follow it with operation_wait. ` +
      (operationHints[operation] ?? ""),
    input: submitInput,
    output: operationProjectionSchema,
    annotations: { readOnlyHint: false, openWorldHint: true },
    async call(input) {
      const requestId = input.request_id ?? newId("req");
      try {
        const { operation: row } = await broker.submit(clientId, {
          idempotencyKey: requestId,
          operation,
          target: input.target as JsonObject,
          arguments: input.arguments as JsonObject,
          reason: input.reason,
        });
        return structuredResult(projectOperation(row));
      } catch (error) {
        if (error instanceof AxonError && error.reason === "IDEMPOTENCY_CONFLICT" && error.metadata.operation_id) {
          return requestIdConflict(context, error.metadata.operation_id);
        }
        return errorResult(toolErrorOf(error, logger));
      }
    },
  });
}

/** The request_id names another request: the model gets the operation it is bound to, to use or to tell apart. */
async function requestIdConflict({ clientId, broker, logger }: OperationToolsContext, existingId: string) {
  try {
    const existing = await broker.get(clientId, existingId);
    return errorResult({ code: "request_id_conflict", message: "this request_id was used for a different request", existing: projectOperation(existing) });
  } catch (error) {
    return errorResult(toolErrorOf(error, logger));
  }
}

/** `operation_get`, `operation_wait`, `operation_list`, `operation_cancel`: the client's own operations only. */
export function lifecycleTools(context: OperationToolsContext): ToolDefinition[] {
  const { clientId, broker, logger } = context;
  // Each answers its value, or its failure as a tool error.
  const answer = async (work: () => Promise<Record<string, unknown>>) => {
    try {
      return structuredResult(await work());
    } catch (error) {
      return errorResult(toolErrorOf(error, logger));
    }
  };

  return [
    defineTool({
      name: "operation_get",
      title: "Get an operation",
      description: "The current state of one of your operations, with its result or error once it has ended.",
      input: z.strictObject({ operation_id: operationId }),
      output: operationProjectionSchema,
      annotations: { readOnlyHint: true },
      call: ({ operation_id }) => answer(async () => projectOperation(await broker.get(clientId, operation_id))),
    }),

    defineTool({
      name: "operation_wait",
      title: "Wait for an operation",
      description:
        `Waits until the operation has ended (succeeded, failed, denied, expired or canceled), at most timeout_seconds ` +
        `(0-${maxWaitSeconds}, default ${maxWaitSeconds}); on timeout it returns the latest state, which is not an error: wait again.`,
      input: z.strictObject({
        operation_id: operationId,
        timeout_seconds: z.number().int().min(0).max(maxWaitSeconds).default(maxWaitSeconds),
      }),
      output: operationProjectionSchema,
      annotations: { readOnlyHint: true },
      call: ({ operation_id, timeout_seconds }, signal) =>
        answer(async () => {
          let operation = await broker.get(clientId, operation_id);
          if (timeout_seconds === 0) return projectOperation(operation);
          const until = AbortSignal.any([signal, AbortSignal.timeout(timeout_seconds * 1000)]);
          // A new revision (progress) ends the broker's wait; this one goes on until the end or the deadline.
          while (!terminalStates.has(operation.state) && !until.aborted) {
            operation = await broker.wait(clientId, operation_id, operation.revision, crossProcessPollSeconds, until);
          }
          return projectOperation(operation);
        }),
    }),

    defineTool({
      name: "operation_list",
      title: "List operations",
      description:
        "Your operations, newest first (without results: use operation_get). With request_id, exactly the operation " +
        "submitted with it: the way to recover an operation whose id was lost. Pass next_cursor back as cursor for the next page.",
      input: z.strictObject({
        request_id: z.string().min(1).max(128).optional(),
        state: z.enum(operationStates).optional(),
        limit: z.number().int().min(1).max(50).default(20),
        cursor: z.string().min(1).max(512).optional().describe("An opaque next_cursor from a previous page."),
      }),
      output: operationPageSchema,
      annotations: { readOnlyHint: true },
      call: ({ request_id, state, limit, cursor }) =>
        answer(async () => {
          const page = await broker.list(clientId, {
            limit,
            ...(request_id === undefined ? {} : { idempotencyKey: request_id }),
            ...(state === undefined ? {} : { state }),
            ...(cursor === undefined ? {} : { cursor }),
          });
          return projectPage(page.operations, page.nextCursor);
        }),
    }),

    defineTool({
      name: "operation_cancel",
      title: "Cancel an operation",
      description:
        "Cancels one of your operations that is pending or approved. An executing one cannot be canceled " +
        "(operation_not_cancelable); one that has ended comes back unchanged.",
      input: z.strictObject({ operation_id: operationId }),
      output: operationProjectionSchema,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
      call: ({ operation_id }) => answer(async () => projectOperation(await broker.cancel(clientId, operation_id))),
    }),
  ];
}
