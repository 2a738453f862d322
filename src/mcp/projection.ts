import * as z from "zod";
import { operationErrorCode } from "../operations/error-codes.js";
import type { OperationRow } from "../operations/store.js";

export const mcpOperationApiVersion = "unyolo.io/mcp-operation/v1";
export const mcpOperationPageApiVersion = "unyolo.io/mcp-operation-page/v1";

export const operationStates = ["pending", "approved", "executing", "succeeded", "failed", "denied", "expired", "canceled"] as const;

/**
 * The closed projection of an operation that MCP clients see (spec §9). Closed on purpose: the client, target,
 * arguments, approval linkage and plan stay on the broker's own surface, so a transcript never carries them.
 */
export const operationProjectionSchema = z.strictObject({
  api_version: z.literal(mcpOperationApiVersion),
  id: z.string(),
  request_id: z.string().describe("The idempotency key: submit again with it to get this operation back."),
  operation: z.string(),
  state: z.enum(operationStates),
  revision: z.number().int().min(1),
  created_at: z.string(),
  updated_at: z.string(),
  terminal_at: z.string().optional(),
  presentation: z.strictObject({ title: z.string(), summary: z.string() }),
  result: z.record(z.string(), z.unknown()).optional(),
  error: z.strictObject({ code: z.string(), message: z.string() }).optional(),
});

export type OperationProjection = z.infer<typeof operationProjectionSchema>;

export const operationPageSchema = z.strictObject({
  api_version: z.literal(mcpOperationPageApiVersion),
  operations: z.array(operationProjectionSchema),
  next_cursor: z.string().optional(),
});

export type OperationPage = z.infer<typeof operationPageSchema>;

/** An operation row as MCP clients see it; a list entry leaves the result out, like a REST list summary. */
export function projectOperation(row: OperationRow, options: { summary?: boolean } = {}): OperationProjection {
  return {
    api_version: mcpOperationApiVersion,
    id: row.id,
    request_id: row.idempotencyKey,
    operation: row.operation,
    state: row.state as OperationProjection["state"],
    revision: row.revision,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
    ...(row.terminalAt ? { terminal_at: row.terminalAt.toISOString() } : {}),
    presentation: { title: row.presentationTitle, summary: row.presentationSummary },
    ...(row.result && !options.summary ? { result: row.result as Record<string, unknown> } : {}),
    ...(row.errorCode ? { error: { code: operationErrorCode(row.errorCode), message: row.errorMessage ?? "" } } : {}),
  };
}

export function projectPage(rows: OperationRow[], nextCursor: string | undefined): OperationPage {
  return {
    api_version: mcpOperationPageApiVersion,
    operations: rows.map((row) => projectOperation(row, { summary: true })),
    ...(nextCursor ? { next_cursor: nextCursor } : {}),
  };
}
