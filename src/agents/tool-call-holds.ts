import type { JsonObject } from "@bufbuild/protobuf";

/*
 * A tool call held for an operator's decision (HumanInTheLoopMiddleware), as the agents side asks for one. Which
 * broker decides it is the server's business: the agents know it only by this interface.
 */

export interface HeldToolCall {
  /** The chat's principal: the client that asked. */
  clientId: string;
  network: string;
  agent: string;
  tool: string;
  arguments: JsonObject;
  /** LangChain's decisions: approve, edit (the operator may change the arguments), reject. */
  allowedDecisions: string[];
  /** What the operator is told of the call. */
  description: string;
}

export type ToolCallOutcome = { ok: true } | { ok: false; message: string };

export type ToolCallDecision =
  | {
      approved: true;
      /** What to run the tool with: the call's, or the operator's where edit was allowed. */
      arguments: JsonObject;
      /** Says how the call went, once it ran. */
      finish(outcome: ToolCallOutcome): void;
    }
  | {
      approved: false;
      /** operation_approval_denied, operation_approval_expired, operation_policy_denied, operation_canceled, ... */
      code: string;
      message: string;
      /** The operator's own words, when one denied it. */
      reason?: string;
    };

export interface ToolCallHolds {
  /**
   * Resolves once the call is decided (a policy may decide at once). `onHeld` is told the id of the operator's request
   * once one waits; aborting `signal` (the chat was cancelled) withdraws it.
   */
  hold(call: HeldToolCall, signal: AbortSignal, onHeld: (requestId: string) => void): Promise<ToolCallDecision>;
}
