import { AxonError, Code } from "../../errors.js";
import type { AgentSpec } from "../agent-network.js";
import type { ChatSession } from "../chat-session.js";
import { MiddlewareChain, type Middleware } from "../middleware-chain.js";
import { prebuiltMiddlewareOf } from "./catalog.js";

const emptyChain = new MiddlewareChain([]);

/** The middleware of one agent activation, made from its spec: Axon's own classes, or the network's in Python. */
export async function middlewareChainOf(session: ChatSession, spec: AgentSpec): Promise<MiddlewareChain> {
  if (spec.middleware.length === 0) return emptyChain;
  const made: Middleware[] = spec.middleware.map(({ className, args }, index) => {
    const prebuilt = prebuiltMiddlewareOf(className);
    if (prebuilt === undefined) throw new AxonError(Code.Unimplemented, "MIDDLEWARE_UNAVAILABLE", `the middleware ${className} of ${spec.name} in ${session.network.name} cannot run`);
    return prebuilt.make(args, spec, index);
  });
  return new MiddlewareChain(made);
}
