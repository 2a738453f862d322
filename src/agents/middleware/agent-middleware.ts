import type { Origin } from "../../gen/neuro_san/api/grpc/chat_pb.js";
import type { LlmMessage } from "../../llm/llm.js";
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
export function middlewareChainOf(session: ChatSession, spec: AgentSpec, origin: Origin[], history: LlmMessage[]): MiddlewareChain | Promise<MiddlewareChain> {
  return spec.middleware.length === 0 ? emptyChain : madeChain(session, spec, origin, history);
}

async function madeChain(session: ChatSession, spec: AgentSpec, origin: Origin[], history: LlmMessage[]): Promise<MiddlewareChain> {
  const made: Middleware[] = await Promise.all(
    spec.middleware.map((entry, index) => {
      const prebuilt = prebuiltMiddlewareOf(entry.className);
      return prebuilt === undefined ? pythonMiddleware(session, spec, entry, origin, index, history) : prebuilt.make(entry.args, spec, index);
    }),
  );
  return new MiddlewareChain(made);
}
