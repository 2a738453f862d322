import { invalidArgument } from "../errors.js";

const grpcUnitMs: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 0.001, n: 0.000001 };

/** `grpc-timeout` (1 to 8 digits and a unit: H M S m u n) in milliseconds; undefined when absent. */
export function parseGrpcTimeout(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const parsed = /^(\d{1,8})([HMSmun])$/.exec(value);
  if (parsed === null) throw invalidTimeout("grpc-timeout", "1 to 8 digits and a unit: H, M, S, m, u or n");
  return Number(parsed[1]) * grpcUnitMs[parsed[2]!]!;
}

/** `connect-timeout-ms` (1 to 10 digits) in milliseconds; undefined when absent. REST honours it as Connect does. */
export function parseConnectTimeout(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d{1,10}$/.test(value)) throw invalidTimeout("connect-timeout-ms", "1 to 10 digits: milliseconds");
  return Number(value);
}

function invalidTimeout(header: string, description: string) {
  return invalidArgument("INVALID_TIMEOUT", "the timeout header is not valid", [{ field: header, description }]);
}
