import type { DescService } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { parseBearer, type Principal, type PrincipalSet } from "../auth/principals.js";
import { AxonError } from "../errors.js";
import { AgentOperationsService } from "../gen/axon/agent/v1/agent_pb.js";
import { OperatorService } from "../gen/axon/operator/v1/operator_pb.js";

/** Who may call what: a service's caller, from the `Authorization` header alone; undefined for an open service. */
export type ServiceAuthenticator = (service: DescService, authorization: string | undefined) => Principal | undefined;

/**
 * Authentication comes before every other check: the agent surface takes a client's bearer secret, the operator
 * surface an operator's (never a client's). The neuro-san surface, health and reflection are open.
 */
export function serviceAuthenticator(principals: { clients: PrincipalSet; operators: PrincipalSet }): ServiceAuthenticator {
  const setFor = new Map<string, PrincipalSet>([
    [AgentOperationsService.typeName, principals.clients],
    [OperatorService.typeName, principals.operators],
  ]);
  return (service, authorization) => {
    const set = setFor.get(service.typeName);
    return set && authenticated(set, authorization ?? null);
  };
}

export function authenticated(set: PrincipalSet, authorization: string | null): Principal {
  const principal = set.authenticate(parseBearer(authorization));
  if (!principal) {
    throw new AxonError(Code.Unauthenticated, "UNAUTHENTICATED", `a valid ${set.kind} bearer secret is required`, {
      metadata: { category: "authentication" },
    });
  }
  return principal;
}
