import type { DescService } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { JwtVerifier } from "../auth/jwt.js";
import { parseBearer, PRINCIPAL_NAME, type Principal, type PrincipalKind, type PrincipalSet } from "../auth/principals.js";
import { AxonError } from "../errors.js";
import { AgentOperationsService } from "../gen/axon/agent/v1/agent_pb.js";
import { TemporaryNetworkService } from "../gen/axon/networks/v1/temporary_networks_pb.js";
import { OperatorService } from "../gen/axon/operator/v1/operator_pb.js";
import { AgentService } from "../gen/neuro_san/api/grpc/agent_pb.js";
import { ConciergeService } from "../gen/neuro_san/api/grpc/concierge_pb.js";
import { certificateNamesOf } from "./client-certificate.js";

/** What a call presents to say who it is. */
export interface Credentials {
  /** The `Authorization` header. */
  authorization: string | undefined;
  /** The names (CN, SAN DNS names) in the verified client certificate of an mTLS connection. */
  certificateNames?: readonly string[] | undefined;
  /** neuro-san's `user_id` request metadata. */
  userId?: string | undefined;
}

export interface AuthenticatorOptions {
  clients: PrincipalSet;
  operators: PrincipalSet;
  /** Bearer JWTs from an identity provider, when one is configured. */
  tokens?: JwtVerifier | undefined;
  /** The neuro-san surface learns who calls it only where that matters: when networks are granted per principal. */
  identifyNeuroSanCallers?: boolean;
  /** `user_id` names the caller: a trusted proxy in front of Axon sets it (AXON_TRUST_USER_ID_METADATA). */
  trustUserIdMetadata?: boolean;
}

/**
 * Who is calling. A client is named by its bearer secret, a bearer JWT, or (with no bearer) its verified client
 * certificate; an operator by its own secret (never a client's) or a JWT carrying the operator claim. A bearer that
 * names nobody is refused, never taken for anonymous.
 */
export class Authenticator {
  constructor(private readonly options: AuthenticatorOptions) {}

  async client(credentials: Credentials): Promise<Principal> {
    const token = parseBearer(credentials.authorization);
    const principal =
      token === undefined
        ? this.byCertificate(credentials.certificateNames)
        : (this.options.clients.authenticate(token) ?? (await this.byToken(token, "client")));
    return principal ?? refuse("client");
  }

  async operator(credentials: Credentials): Promise<Principal> {
    const token = parseBearer(credentials.authorization);
    const principal = token === undefined ? undefined : (this.options.operators.authenticate(token) ?? (await this.byToken(token, "operator")));
    return principal ?? refuse("operator");
  }

  /**
   * The neuro-san surface is open: a call that presents nothing is anonymous (undefined). Answered at once unless a
   * bearer must be checked, as List's calls are on their fast paths.
   */
  neuroSanCaller(credentials: Credentials): Principal | undefined | Promise<Principal> {
    if (!this.options.identifyNeuroSanCallers) return undefined;
    if (credentials.authorization !== undefined) return this.client(credentials);
    const certified = this.byCertificate(credentials.certificateNames);
    if (certified) return certified;
    const userId = credentials.userId;
    if (this.options.trustUserIdMetadata && userId !== undefined && PRINCIPAL_NAME.test(userId)) return { name: userId, kind: "client" };
    return undefined;
  }

  private byCertificate(names: readonly string[] | undefined): Principal | undefined {
    const name = names?.find((candidate) => this.options.clients.names.includes(candidate));
    return name === undefined ? undefined : { name, kind: "client" };
  }

  private async byToken(token: string, kind: PrincipalKind): Promise<Principal | undefined> {
    const tokens = this.options.tokens;
    if (tokens === undefined || !JwtVerifier.looksLikeJwt(token)) return undefined;
    const identity = await tokens.verify(token);
    if (identity === undefined || (kind === "operator" && !identity.operator)) return undefined;
    return { name: identity.name, kind };
  }
}

function refuse(kind: PrincipalKind): never {
  throw new AxonError(Code.Unauthenticated, "UNAUTHENTICATED", `a valid ${kind} bearer secret is required`, {
    metadata: { category: "authentication" },
  });
}

/** A service's caller; undefined for an open service or an anonymous caller. Throws UNAUTHENTICATED. */
export type ServiceAuthenticator = (service: DescService, credentials: Credentials) => Principal | undefined | Promise<Principal | undefined>;

/**
 * Authentication comes before every other check: the agent surface (and temporary networks) takes a client, the
 * operator surface an operator.
 * The neuro-san surface names its caller when it can; health and reflection are open.
 */
export function serviceAuthenticator(authenticator: Authenticator): ServiceAuthenticator {
  const bySurface = new Map<string, (credentials: Credentials) => Principal | undefined | Promise<Principal | undefined>>([
    [AgentOperationsService.typeName, (credentials) => authenticator.client(credentials)],
    [TemporaryNetworkService.typeName, (credentials) => authenticator.client(credentials)],
    [OperatorService.typeName, (credentials) => authenticator.operator(credentials)],
    [AgentService.typeName, (credentials) => authenticator.neuroSanCaller(credentials)],
    [ConciergeService.typeName, (credentials) => authenticator.neuroSanCaller(credentials)],
  ]);
  return (service, credentials) => bySurface.get(service.typeName)?.(credentials);
}

/** What a plain HTTP route's request presents (the RPCs get theirs from the call pipeline). */
export function credentialsOf(req: { headers: { authorization?: string | undefined }; socket: unknown }): Credentials {
  return { authorization: req.headers.authorization, certificateNames: certificateNamesOf(req.socket) };
}
