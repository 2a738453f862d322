import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorInfoSchema } from "../gen/google/rpc/error_details_pb.js";
import { CliFailure, ExitStatus } from "./cli-failure.js";

/** google.rpc.Code names by number, as the status JSON and gRPC carry them. */
const CODE_NAMES = [
  "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED",
  "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE",
  "DATA_LOSS", "UNAUTHENTICATED",
] as const;

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
  override describe(): string {
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
