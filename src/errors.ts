import { Code } from "@connectrpc/connect";

export { Code };

export interface FieldViolation {
  field: string;
  description: string;
}

/** google.rpc.QuotaFailure.Violation: which quota a refusal hit. */
export interface QuotaViolation {
  subject: string;
  description: string;
}

/**
 * A failure the client can act on. The core throws these; the edge turns them into google.rpc.Status
 * (src/server/status.ts) and nothing else reaches a client.
 *
 * Keep `message` free of `/ : , ? # & = + $ @ ;`: grpc-js leaves them percent-escaped in status messages.
 * Specifics go in `metadata` (ErrorInfo) or `fieldViolations` (BadRequest).
 */
export class AxonError extends Error {
  override readonly name = "AxonError";
  readonly metadata: Record<string, string>;
  readonly fieldViolations: FieldViolation[];
  /** When to retry (google.rpc.RetryInfo, and Retry-After over HTTP). */
  readonly retryAfterSeconds: number | undefined;
  readonly quotaViolations: QuotaViolation[];

  constructor(
    readonly code: Code,
    /** UPPER_SNAKE, stable, machine-readable: the ErrorInfo reason. */
    readonly reason: string,
    message: string,
    options: {
      metadata?: Record<string, string>;
      fieldViolations?: FieldViolation[];
      retryAfterSeconds?: number;
      quotaViolations?: QuotaViolation[];
      cause?: unknown;
    } = {},
  ) {
    super(message, { cause: options.cause });
    this.metadata = options.metadata ?? {};
    this.fieldViolations = options.fieldViolations ?? [];
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.quotaViolations = options.quotaViolations ?? [];
  }
}

export function invalidArgument(reason: string, message: string, fieldViolations: FieldViolation[] = []): AxonError {
  return new AxonError(Code.InvalidArgument, reason, message, { fieldViolations });
}

export function notFound(reason: string, message: string, metadata: Record<string, string> = {}): AxonError {
  return new AxonError(Code.NotFound, reason, message, { metadata });
}

export function agentNotFound(agentName: string): AxonError {
  return notFound("AGENT_NOT_FOUND", "agent network not found", { agent_name: agentName });
}
