import type { CallToolResult, Tool, ToolAnnotations } from "@modelcontextprotocol/sdk/types.js";
import type * as z from "zod";
import { AxonError } from "../errors.js";
import type { Logger } from "../logger.js";

/**
 * One MCP tool: its schemas (listed as JSON Schema, and what arguments are checked against before `call`) and what it
 * does. `call` never throws: a failure is an error result.
 */
export interface ToolDefinition<Input extends z.ZodObject = z.ZodObject> {
  name: string;
  title: string;
  description: string;
  input: Input;
  /** What `tools/list` shows instead of `input`'s JSON Schema, when a contract fixes it (neuro-san's ChatRequest). */
  listedInputSchema?: Tool["inputSchema"];
  /** What `structuredContent` holds on success; clients validate it against this. */
  output: z.ZodObject;
  annotations?: ToolAnnotations;
  /** `signal` ends with the call: the client cancelled, the HTTP request went away, or the server is stopping. */
  call(args: z.output<Input>, signal: AbortSignal): Promise<CallToolResult>;
}

/** Checks a tool's `call` against its own input schema, then files it with the rest. */
export function defineTool<Input extends z.ZodObject>(tool: ToolDefinition<Input>): ToolDefinition {
  return tool as unknown as ToolDefinition;
}

/** What a failed tool call says, in its one text block: a lower_snake code and a message, plus what helps a retry. */
export interface ToolError {
  code: string;
  message: string;
  field_violations?: { field: string; description: string }[];
  retry_after_seconds?: number;
  [extra: string]: unknown;
}

/** A success: the structured value, and the same JSON as text for clients that read only text. */
export function structuredResult(value: Record<string, unknown>): CallToolResult {
  return { structuredContent: value, content: [{ type: "text", text: JSON.stringify(value) }] };
}

/**
 * A failure is a result, not a protocol error, so the model sees it and can act (spec §9). It carries no
 * `structuredContent`: clients validate that against the tool's output schema, which describes successes only.
 */
export function errorResult(error: ToolError): CallToolResult {
  return { isError: true, content: [{ type: "text", text: JSON.stringify(error) }] };
}

/** The one mapping from anything thrown to a tool error; what is not an AxonError is a bug and says nothing. */
export function toolErrorOf(error: unknown, logger: Logger): ToolError {
  if (error instanceof AxonError) {
    return {
      code: error.reason.toLowerCase(),
      message: error.message,
      ...(error.fieldViolations.length > 0 ? { field_violations: error.fieldViolations.map(renameField) } : {}),
      ...(error.retryAfterSeconds !== undefined ? { retry_after_seconds: error.retryAfterSeconds } : {}),
    };
  }
  logger.error({ err: error }, "MCP tool failed");
  return { code: "internal", message: "internal error" };
}

// The broker speaks of idempotency keys; over MCP the same value is the request_id.
function renameField(violation: { field: string; description: string }) {
  return violation.field === "idempotency_key" ? { ...violation, field: "request_id" } : violation;
}
