import type { AgentRun } from "../middleware-chain.js";

/**
 * LangChain's thread-level counts, kept for the request: Axon keeps nothing between turns (the client carries the
 * conversation), so a "thread" is every run of the agent within one request. Keyed by network, agent and counter.
 */
const counts = new WeakMap<object, Map<string, number>>();

export function threadCount(run: AgentRun, counter: string): { get(): number; add(n: number): void } {
  let forRequest = counts.get(run.session.request);
  if (forRequest === undefined) counts.set(run.session.request, (forRequest = new Map()));
  const key = `${run.session.network.name}\u0000${run.spec.name}\u0000${counter}`;
  return {
    get: () => forRequest.get(key) ?? 0,
    add: (n) => void forRequest.set(key, (forRequest.get(key) ?? 0) + n),
  };
}
