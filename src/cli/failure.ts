import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorInfoSchema } from "../gen/google/rpc/error_details_pb.js";

/**
 * Exit statuses of `axon`, one per kind of failure a script may want to tell apart. The google.rpc code of a server
 * error picks the status; everything else the CLI raises says its own.
 */
export const ExitStatus = {
  ok: 0,
  /** The operation or test ran and did not succeed (e.g. `op wait` ended failed or denied). */
  failed: 1,
  usage: 2,
  notFound: 3,
  /** Authentication or permission. */
  auth: 4,
  conflict: 5,
  /** Rate limited, unavailable, timed out or unreachable: worth retrying later. */
  unavailable: 6,
  server: 7,
} as const;

export const EXIT_STATUS_HELP = `Exit status:
  0  ok
  1  the operation or test failed (e.g. op wait ended failed, denied, expired or canceled)
  2  usage error (bad options or arguments, or a request the server rejected as invalid)
  3  not found (network, operation, grant or request)
  4  authentication or permission (missing or wrong --token / --operator-token)
  5  conflict (idempotency conflict, stale revision, not cancelable, already exists)
  6  rate limited, unavailable or unreachable (retry later)
  7  other server error`;

/** google.rpc.Code names by number, as the status JSON and gRPC carry them. */
const CODE_NAMES = [
  "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED",
  "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE",
  "DATA_LOSS", "UNAUTHENTICATED",
] as const;

/** What the CLI reports on stderr as `axon: <message>` before exiting with `exitStatus`. */
export class CliFailure extends Error {
  override readonly name = "CliFailure";
  constructor(
    message: string,
    readonly exitStatus: number,
  ) {
    super(message);
  }
}

/** ErrorInfo metadata keys that name what a failure is about, in the order they are looked for. */
const SUBJECT_KEYS = ["agent_name", "operation_id", "request_id", "grant_id"];

/** A google.rpc.Status the server answered with, on any protocol. */
export class ServerFailure extends CliFailure {
  constructor(
    message: string,
    readonly code: number,
    readonly reason: string | undefined,
    /** ErrorInfo metadata: what the failure is about (agent_name, operation_id, ...). */
    readonly metadata: Record<string, string> = {},
  ) {
    super(message, exitStatusOf(code));
  }

  /**
   * `subject: message (REASON, CODE_NAME)`: the one line a user sees. It names the network, operation or request the
   * server says it is about, and says the code once when the reason is the code's own name.
   */
  describe(): string {
    const codeName = CODE_NAMES[this.code] ?? `code ${this.code}`;
    const codes = this.reason === undefined || this.reason === codeName ? codeName : `${this.reason}, ${codeName}`;
    const subject = SUBJECT_KEYS.map((key) => this.metadata[key]).find((value) => value !== undefined && value !== "");
    return `${subject === undefined ? "" : `${subject}: `}${this.message} (${codes})`;
  }
}

function exitStatusOf(code: number): number {
  switch (code) {
    case Code.NotFound:
      return ExitStatus.notFound;
    case Code.Unauthenticated:
    case Code.PermissionDenied:
      return ExitStatus.auth;
    case Code.Aborted:
    case Code.AlreadyExists:
      return ExitStatus.conflict;
    case Code.ResourceExhausted:
    case Code.Unavailable:
    case Code.DeadlineExceeded:
      return ExitStatus.unavailable;
    case Code.InvalidArgument:
    case Code.OutOfRange:
      return ExitStatus.usage;
    default:
      return ExitStatus.server;
  }
}

/** HTTP statuses back to codes, for an error body that is not a google.rpc.Status (a proxy, another server). */
function codeOfHttpStatus(status: number): number {
  const codes: Record<number, number> = { 400: Code.InvalidArgument, 401: Code.Unauthenticated, 403: Code.PermissionDenied, 404: Code.NotFound, 409: Code.Aborted, 429: Code.ResourceExhausted, 499: Code.Canceled, 503: Code.Unavailable, 504: Code.DeadlineExceeded };
  return codes[status] ?? Code.Internal;
}

interface StatusJson {
  code?: unknown;
  message?: unknown;
  details?: unknown;
}

/** A google.rpc.Status in canonical JSON (a REST error body or a json-lines error line). */
export function failureFromStatusJson(status: StatusJson, httpStatus?: number): ServerFailure {
  const code = typeof status.code === "number" ? status.code : codeOfHttpStatus(httpStatus ?? 500);
  const details = Array.isArray(status.details) ? (status.details as Record<string, unknown>[]) : [];
  const errorInfo = details.find((detail) => String(detail["@type"]).endsWith("google.rpc.ErrorInfo"));
  const reason = errorInfo?.reason;
  const message = typeof status.message === "string" && status.message !== "" ? status.message : `HTTP ${httpStatus ?? "error"}`;
  return new ServerFailure(message, code, typeof reason === "string" ? reason : undefined, stringValues(errorInfo?.metadata));
}

/** An error body of any shape: a google.rpc.Status when it is one, else the HTTP status says what happened. */
export function failureFromHttpBody(httpStatus: number, text: string): ServerFailure {
  try {
    const body = JSON.parse(text) as unknown;
    if (body !== null && typeof body === "object" && "code" in body) return failureFromStatusJson(body as StatusJson, httpStatus);
  } catch {
    // not JSON: fall through
  }
  return new ServerFailure(`HTTP ${httpStatus}${text.trim() === "" ? "" : `: ${text.trim().slice(0, 200)}`}`, codeOfHttpStatus(httpStatus), undefined);
}

/** Any error thrown while running a command, as the failure to report. */
export function toCliFailure(error: unknown, url: string): CliFailure {
  if (error instanceof CliFailure) return error;
  if (error instanceof ConnectError) {
    const errorInfo = error.findDetails(ErrorInfoSchema)[0];
    return new ServerFailure(error.rawMessage, error.code, errorInfo?.reason, errorInfo?.metadata);
  }
  // fetch fails with a TypeError whose cause says why (ECONNREFUSED, ENOTFOUND, ...): the server is out of reach.
  if (error instanceof TypeError && error.message === "fetch failed") {
    const cause = error.cause as { code?: string; message?: string } | undefined;
    return new CliFailure(`cannot reach ${url} (${cause?.code ?? cause?.message ?? "fetch failed"})`, ExitStatus.unavailable);
  }
  return new CliFailure(error instanceof Error ? error.message : String(error), ExitStatus.server);
}

function stringValues(metadata: unknown): Record<string, string> {
  if (metadata === null || typeof metadata !== "object") return {};
  return Object.fromEntries(Object.entries(metadata).filter((entry): entry is [string, string] => typeof entry[1] === "string"));
}

/** The one line a failure shows on stderr. */
export function failureLine(failure: CliFailure): string {
  return `axon: ${failure instanceof ServerFailure ? failure.describe() : failure.message}\n`;
}
