/**
 * How `axon` fails: its exit statuses and the one line on stderr. What a server answered is failure.ts's (ServerFailure),
 * which needs protobuf and Connect; this file needs neither, so that `axon --help` does not load them.
 */
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

/** What the CLI reports on stderr as `axon: <message>` before exiting with `exitStatus`. */
export class CliFailure extends Error {
  override readonly name = "CliFailure";
  constructor(
    message: string,
    readonly exitStatus: number,
  ) {
    super(message);
  }

  /** What follows `axon: ` on stderr. */
  describe(): string {
    return this.message;
  }
}

/** The one line a failure shows on stderr. */
export function failureLine(failure: CliFailure): string {
  return `axon: ${failure.describe()}\n`;
}
