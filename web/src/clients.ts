import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { AgentOperationsService } from "../../src/gen/axon/agent/v1/agent_pb.js";
import { OperatorService } from "../../src/gen/axon/operator/v1/operator_pb.js";
import { AgentService } from "../../src/gen/neuro_san/api/grpc/agent_pb.js";
import { ConciergeService } from "../../src/gen/neuro_san/api/grpc/concierge_pb.js";

/** A secret entered once and kept for the browser session (sessionStorage: gone when the tab closes). */
export class StoredSecret {
  constructor(private readonly key: string) {}
  get value(): string {
    return sessionStorage.getItem(this.key) ?? "";
  }
  set(secret: string): void {
    sessionStorage.setItem(this.key, secret);
  }
  clear(): void {
    sessionStorage.removeItem(this.key);
  }
}

export const clientSecret = new StoredSecret("axon.client-secret");
export const operatorSecret = new StoredSecret("axon.operator-secret");

// Read at call time, so a secret entered (or forgotten) later applies to the next call.
const bearer =
  (secret: StoredSecret): Interceptor =>
  (next) =>
  (request) => {
    request.header.set("authorization", `Bearer ${secret.value}`);
    return next(request);
  };

const transport = (interceptors: Interceptor[] = []) => createConnectTransport({ baseUrl: location.origin, interceptors });

export const concierge = createClient(ConciergeService, transport());
export const agents = createClient(AgentService, transport());
export const operations = createClient(AgentOperationsService, transport([bearer(clientSecret)]));
export const operator = createClient(OperatorService, transport([bearer(operatorSecret)]));

/** "PermissionDenied: ..." for the status line. */
export function describeError(error: unknown): string {
  const connectError = ConnectError.from(error);
  return `${Code[connectError.code]}: ${connectError.rawMessage}`;
}

/** The call was cancelled by us (a newer selection replaced it), not failed. */
export function isCanceled(error: unknown): boolean {
  return ConnectError.from(error).code === Code.Canceled;
}

export function isUnauthenticated(error: unknown): boolean {
  const code = ConnectError.from(error).code;
  return code === Code.Unauthenticated || code === Code.PermissionDenied;
}
