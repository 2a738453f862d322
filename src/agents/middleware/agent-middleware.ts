import type { Origin } from "../../gen/neuro_san/api/grpc/chat_pb.js";
import type { AgentSpec } from "../agent-network.js";
import type { ChatSession } from "../chat-session.js";
import { MiddlewareChain, type Middleware } from "../middleware-chain.js";
import { prebuiltMiddlewareOf } from "./catalog.js";
import { pythonMiddleware } from "./python-middleware.js";

const emptyChain = new MiddlewareChain([]);

/**
 * The middleware of one agent activation, made from its spec: LangChain's prebuilt classes by Axon, any other class in
 * the request's Python worker. `origin` is the agent's own.
 */
export function middlewareChainOf(session: ChatSession, spec: AgentSpec, origin: Origin[]): MiddlewareChain | Promise<MiddlewareChain> {
  return spec.middleware.length === 0 ? emptyChain : madeChain(session, spec, origin);
}

async function madeChain(session: ChatSession, spec: AgentSpec, origin: Origin[]): Promise<MiddlewareChain> {
  const made: Middleware[] = await Promise.all(
    spec.middleware.map(({ className, args }, index) => {
      const prebuilt = prebuiltMiddlewareOf(className);
      return prebuilt === undefined ? pythonMiddleware(session, spec, className, args, origin, index) : prebuilt.make(args, spec, index);
    }),
  );
  return new MiddlewareChain(made);
}
