import type { ServiceImpl } from "@connectrpc/connect";
import { agentNotFound } from "../../src/errors.js";
import type { AgentService } from "../../src/gen/neuro_san/api/grpc/agent_pb.js";
import { requestMetadataKey } from "../../src/server/context.js";

/** What the instrumented AgentService saw: each call's forwarded metadata, and its signal by agent name. */
export interface Seen {
  metadata: Record<string, string>[];
  signals: Map<string, AbortSignal>;
}

/**
 * An AgentService for testing transports: Function answers with a header and a trailer, and the agent name steers
 * it: "hang" never answers, "nobody" is NOT_FOUND, "crash" throws a bug, "long" answers 5,000 characters.
 */
export function instrumentedAgentService(seen: Seen): ServiceImpl<typeof AgentService> {
  return {
    function(request, context) {
      seen.metadata.push(context.values.get(requestMetadataKey));
      seen.signals.set(request.agentName, context.signal);
      if (request.agentName === "hang") return new Promise(() => {});
      if (request.agentName === "nobody") throw agentNotFound("nobody");
      if (request.agentName === "crash") throw new Error("a bug with a secret path /etc/x");
      context.responseHeader.set("x-answered-by", "fast path");
      context.responseTrailer.set("x-tally", "1");
      return { function: { description: request.agentName === "long" ? "x".repeat(5000) : `I am ${request.agentName}` } };
    },
    connectivity: () => ({}),
    async *streamingChat() {},
  };
}
