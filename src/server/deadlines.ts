import { invalidArgument } from "../errors.js";

const grpcUnitMs: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 0.001, n: 0.000001 };

/**
 * The longest deadline a timer can hold: Node's timers overflow past 2^31 - 1 ms and fire at once. gRPC allows 8 digits
 * of hours and Connect 10 digits of milliseconds, so a longer deadline (over 24 days, longer than any call) is held as
 * this one. It is a whole number of minutes so that connect-node's routes can be handed it as a `grpc-timeout` too.
 */
export const maxDeadlineMs = 35_791 * 60_000;

/** `grpc-timeout` (1 to 8 digits and a unit: H M S m u n) in milliseconds; undefined when absent. */
export function parseGrpcTimeout(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const parsed = /^(\d{1,8})([HMSmun])$/.exec(value);
  if (parsed === null) throw invalidTimeout("grpc-timeout", "1 to 8 digits and a unit: H, M, S, m, u or n");
  return Math.min(Number(parsed[1]) * grpcUnitMs[parsed[2]!]!, maxDeadlineMs);
}

/** `connect-timeout-ms` (1 to 10 digits) in milliseconds; undefined when absent. REST honours it as Connect does. */
export function parseConnectTimeout(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d{1,10}$/.test(value)) throw invalidTimeout("connect-timeout-ms", "1 to 10 digits: milliseconds");
  return Math.min(Number(value), maxDeadlineMs);
}

/**
 * Rewrites a valid timeout header longer than `maxDeadlineMs` to that bound before connect-node reads it, which would
 * hand the overflowing value to a timer. A malformed one is left for connect-node to refuse.
 */
export function boundTimeoutHeaders(headers: NodeJS.Dict<string | string[]>): void {
  const grpc = headers["grpc-timeout"];
  if (typeof grpc === "string" && /^\d{1,8}[HMSmun]$/.test(grpc) && parseGrpcTimeout(grpc) === maxDeadlineMs) headers["grpc-timeout"] = `${maxDeadlineMs / 60_000}M`;
  const connect = headers["connect-timeout-ms"];
  if (typeof connect === "string" && /^\d{1,10}$/.test(connect) && Number(connect) > maxDeadlineMs) headers["connect-timeout-ms"] = String(maxDeadlineMs);
}

function invalidTimeout(header: string, description: string) {
  return invalidArgument("INVALID_TIMEOUT", "the timeout header is not valid", [{ field: header, description }]);
}
