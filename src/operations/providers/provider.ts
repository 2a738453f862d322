import type { JsonObject } from "@bufbuild/protobuf";
import type { FieldViolation } from "../../errors.js";

/** What a provider shows of an operation in transcripts: never a secret. */
export interface Presentation {
  /** At most 160 characters. */
  title: string;
  /** At most 500 characters. */
  summary: string;
}

/** The operation as a provider sees it when executing or reconciling. */
export interface OperationToExecute {
  id: string;
  clientId: string;
  operation: string;
  target: JsonObject;
  arguments: JsonObject;
}

/** A proven outcome. Anything else (a crash or timeout after dispatch) is ambiguous and is never retried. */
export type ExecutionOutcome =
  | { state: "succeeded"; result: JsonObject }
  | { state: "failed"; code: string; message: string };

export interface ExecutionContext {
  signal: AbortSignal;
  /** Shows progress on a long-running operation (a new revision with this summary). */
  reportProgress(summary: string): void;
}

/**
 * One operation type: it owns the validation of its target and arguments, what is shown of it, how it is
 * executed, and how an interrupted execution is reconciled. Providers register by `operation` name.
 */
export interface Provider {
  readonly operation: string;
  /**
   * An operation of a native route (Git, OpenAI's /v1, a held tool call): decided through `NativeCalls` and executed
   * by its route, never submitted by an agent nor claimed by the worker.
   */
  readonly native?: boolean;
  /** Field violations of target and arguments (field paths like `target.path`) for this client; empty when valid. */
  validate(target: JsonObject, args: JsonObject, clientId: string): FieldViolation[];
  present(target: JsonObject, args: JsonObject): Presentation;
  /** Resolves with a proven outcome; rejects when the outcome is unknown (the upstream may have acted). */
  execute(operation: OperationToExecute, context: ExecutionContext): Promise<ExecutionOutcome>;
  /**
   * After a restart, for an operation left executing: the outcome if the provider can prove it; `"replay"` when sending
   * it again is safe because the upstream answers a repeat with the first call's result (the same idempotency key),
   * so executing it again recovers the outcome; else undefined (the outcome stays unknown).
   */
  reconcile(operation: OperationToExecute): Promise<ExecutionOutcome | "replay" | undefined>;
}
