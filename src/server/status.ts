import { anyPack, anyUnpack, AnySchema, type Any } from "@bufbuild/protobuf/wkt";
import { create, toBinary, toJson, type DescMessage, type JsonValue, type MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { codeToHttpStatus } from "@connectrpc/connect/protocol-connect";
import { AxonError } from "../errors.js";
import { isStorageError, isStorageUnavailable } from "../store/storage-errors.js";
import {
  BadRequestSchema,
  ErrorInfoSchema,
  QuotaFailureSchema,
  RetryInfoSchema,
  type ErrorInfo,
} from "../gen/google/rpc/error_details_pb.js";
import { StatusSchema, type Status } from "../gen/google/rpc/status_pb.js";
import { typeRegistry } from "./descriptors.js";
import { contractCode } from "./strict/error-codes.js";

type OutgoingDetail = { desc: DescMessage; value: MessageInitShape<DescMessage> };

/** The ErrorInfo domain of every error Axon itself raises. */
export const errorDomain = "axon";

/** A database restart takes seconds; sooner than this a retry would most likely fail again. */
const storageRetryAfterSeconds = 1;

/**
 * The one mapper from anything thrown to what a client may see. AxonErrors keep their code and carry
 * ErrorInfo (+ BadRequest); ConnectErrors (raised by the protocol layer: deadlines, shutdown) keep theirs and gain
 * an ErrorInfo named after their code when they have none; an unreachable database
 * is UNAVAILABLE (retry shortly); anything else is an INTERNAL with no message, so stacks, hosts and driver text
 * never leave the process.
 */
export function toConnectError(error: unknown, options: MapOptions = {}): ConnectError {
  if (error instanceof AxonError) {
    const metadata = withCode({ category: categoryOf(error.code), ...error.metadata }, error.code, error.reason, options);
    const details: OutgoingDetail[] = [{ desc: ErrorInfoSchema, value: { reason: error.reason, domain: errorDomain, metadata } }];
    if (error.fieldViolations.length > 0) {
      details.push({ desc: BadRequestSchema, value: { fieldViolations: error.fieldViolations } });
    }
    const headers = new Headers();
    if (error.retryAfterSeconds !== undefined) {
      details.push({ desc: RetryInfoSchema, value: { retryDelay: { seconds: BigInt(error.retryAfterSeconds) } } });
      headers.set("retry-after", String(error.retryAfterSeconds));
    }
    if (error.quotaViolations.length > 0) details.push({ desc: QuotaFailureSchema, value: { violations: error.quotaViolations } });
    if (error.code === Code.Unauthenticated) headers.set("www-authenticate", "Bearer");
    return new ConnectError(error.message, error.code, headers, details, error);
  }
  if (error instanceof ConnectError) return errorInfoOf(error) ? error : withErrorInfo(error, options);
  if (isStorageUnavailable(error)) {
    return toConnectError(
      new AxonError(Code.Unavailable, "STORAGE_UNAVAILABLE", "storage unavailable", {
        metadata: { category: "storage" },
        retryAfterSeconds: storageRetryAfterSeconds,
        cause: error,
      }),
      options,
    );
  }
  return new ConnectError("internal error", Code.Internal, undefined, [
    { desc: ErrorInfoSchema, value: { reason: "INTERNAL", domain: errorDomain, metadata: withCode({ category: isStorageError(error) ? "storage" : "other" }, Code.Internal, "INTERNAL", options) } },
  ]);
}

export interface MapOptions {
  /** The error of a strict service (Agent V1, Operator V1): ErrorInfo also carries unYOLO's code word. */
  readonly contractCodes?: boolean;
}

function withCode(metadata: Record<string, string>, code: Code, reason: string, options: MapOptions): Record<string, string> {
  return options.contractCodes ? { ...metadata, code: contractCode(code, reason, metadata.category ?? "") } : metadata;
}

/**
 * The closed set of categories (Agent V1 §7) that logs and metric labels may carry; an error names its own
 * when the code alone does not say it (storage failures are UNAVAILABLE too).
 */
export function categoryOf(code: Code): string {
  switch (code) {
    case Code.Unauthenticated:
      return "authentication";
    case Code.PermissionDenied:
      return "authorization";
    case Code.Canceled:
      return "canceled";
    case Code.Aborted:
    case Code.AlreadyExists:
      return "conflict";
    case Code.Unknown:
      return "invalid_response";
    case Code.ResourceExhausted:
      return "rate_limited";
    case Code.InvalidArgument:
    case Code.NotFound:
    case Code.FailedPrecondition:
    case Code.OutOfRange:
      return "rejected";
    case Code.DeadlineExceeded:
      return "timeout";
    case Code.Unavailable:
      return "unavailable";
    default:
      return "other";
  }
}

/** True when the error came from our own code paths or the outside world rather than a bug: not worth an error log. */
export function isExpected(error: unknown): boolean {
  return (
    error instanceof AxonError ||
    (error instanceof ConnectError && error.code !== Code.Internal && error.code !== Code.Unknown) ||
    isStorageUnavailable(error)
  );
}

/** ErrorInfo for an error of the protocol layer: its code as the reason (DEADLINE_EXCEEDED), and its category. */
function withErrorInfo(error: ConnectError, options: MapOptions): ConnectError {
  const reason = Code[error.code].replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
  const info = { desc: ErrorInfoSchema, value: { reason, domain: errorDomain, metadata: withCode({ category: categoryOf(error.code) }, error.code, reason, options) } };
  const mapped = new ConnectError(error.rawMessage, error.code, error.metadata, [], error.cause);
  mapped.details.push(...error.details, info);
  return mapped;
}

/** The HTTP status REST answers with, from the standard code mapping (the one Connect uses). */
export function httpStatusOf(code: Code): number {
  return codeToHttpStatus(code);
}

/** google.rpc.Status in canonical protobuf JSON: numeric code, message, details as Any JSON with `@type`. */
export function statusJson(error: ConnectError): JsonValue {
  return toJson(StatusSchema, statusOf(error), { registry: typeRegistry });
}

/** google.rpc.Status in binary, as gRPC's `grpc-status-details-bin` carries it. */
export function statusBinary(error: ConnectError): Uint8Array {
  return toBinary(StatusSchema, statusOf(error));
}

function statusOf(error: ConnectError): Status {
  return create(StatusSchema, { code: error.code, message: error.rawMessage, details: detailsAsAny(error) });
}

/** Reads back the ErrorInfo of an error, e.g. to label logs and metrics. */
export function errorInfoOf(error: ConnectError): ErrorInfo | undefined {
  for (const any of detailsAsAny(error)) {
    const info = anyUnpack(any, ErrorInfoSchema);
    if (info) return info;
  }
  return undefined;
}

// A ConnectError holds details either as messages (raised here) or as raw bytes (decoded from the wire).
function detailsAsAny(error: ConnectError): Any[] {
  return error.details.map((detail) =>
    "desc" in detail
      ? anyPack(detail.desc, create(detail.desc, detail.value))
      : create(AnySchema, { typeUrl: `type.googleapis.com/${detail.type}`, value: detail.value }),
  );
}
