import { Code, type Interceptor } from "@connectrpc/connect";
import { parseBearer, type Principal, type PrincipalSet } from "../auth/principals.js";
import { AxonError } from "../errors.js";
import { AgentOperationsService } from "../gen/axon/agent/v1/agent_pb.js";
import { OperatorService } from "../gen/axon/operator/v1/operator_pb.js";
import { principalKey } from "./context.js";

/**
 * Authentication comes before every other check: the agent surface takes a client's bearer secret, the operator
 * surface an operator's (never a client's). The neuro-san surface, health and reflection are open.
 */
export function authenticate(principals: { clients: PrincipalSet; operators: PrincipalSet }): Interceptor {
  const setFor: Record<string, PrincipalSet> = {
    [AgentOperationsService.typeName]: principals.clients,
    [OperatorService.typeName]: principals.operators,
  };
  return (next) => async (request) => {
    const set = setFor[request.service.typeName];
    if (set) request.contextValues.set(principalKey, authenticated(set, request.header.get("authorization")));
    return next(request);
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
