import { createContextKey } from "@connectrpc/connect";
import type { Principal } from "../auth/principals.js";

/** The wire protocol a call arrived on: a metric label and a log field. */
export type Protocol = "grpc" | "grpc-web" | "connect" | "rest";

export const protocolKey = createContextKey<Protocol>("connect", { description: "wire protocol" });

/** The agent named by neuro-san's legacy gRPC path `/<agent>.AgentService/<Method>`, if the call used one. */
export const pathAgentNameKey = createContextKey<string>("", { description: "agent from the legacy method path" });

/**
 * Called by a streaming handler once the request is validated and the stream really starts. REST uses it to
 * send the 200 and the json-lines headers at once; errors found before it are plain HTTP errors.
 */
export const streamStartKey = createContextKey<() => void>(() => {}, { description: "stream started" });

/** The request id of the call (from the `request_id` header, or generated). */
export const requestIdKey = createContextKey<string>("", { description: "request id" });

/** Headers named by AGENT_FORWARDED_REQUEST_METADATA, copied from the request; forwarded to external agents. */
export const requestMetadataKey = createContextKey<Record<string, string>>({}, { description: "forwarded metadata" });

/** The HTTP status a unary call answers with over REST (e.g. 202 for an accepted operation); gRPC ignores it. */
export const httpStatusKey = createContextKey<number>(200, { description: "REST status" });

/** The socket the call arrived on (connect-node's HandlerContext does not carry it). */
export const socketKey = createContextKey<unknown>(undefined, { description: "socket" });

/** Who is calling, once authenticated: a client (Agent V1) or an operator. */
export const principalKey = createContextKey<Principal | undefined>(undefined, { description: "principal" });
