import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { ChatRunner } from "../agents/chat-runner.js";
import { filterChatMessages } from "../agents/filters.js";
import type { AgentNetwork } from "../agents/agent-network.js";
import type { AgentRegistry } from "../agents/registry.js";
import type { NetworkAccess } from "../auth/network-access.js";
import { agentNotFound, invalidArgument } from "../errors.js";
import { ChatFilter_ChatFilterType as ChatFilterType, type AgentService } from "../gen/neuro_san/api/grpc/agent_pb.js";
import { pathAgentNameKey, principalKey, requestMetadataKey, streamStartKey } from "./context.js";

/** AgentService: protobuf in, domain calls, protobuf out. Errors are mapped by the interceptor. */
export function agentService(registry: AgentRegistry, chats: ChatRunner, access: NetworkAccess): ServiceImpl<typeof AgentService> {
  const networkOf = (agentName: string, context: HandlerContext): Promise<AgentNetwork> => callableNetwork(registry, access, agentName, context);
  return {
    async function(request, context) {
      const network = await networkOf(request.agentName, context);
      const spec = registry.function(network.name);
      return Object.keys(spec).length > 0 ? { function: spec } : {};
    },

    async connectivity(request, context) {
      const network = await networkOf(request.agentName, context);
      // The network's metadata as neuro-san reports it (description, tags, sample_queries, ...): clients show it.
      // A network without any sends none, so REST answers no `metadata: {}` neuro-san never sent.
      const { metadata } = network;
      return { connectivityInfo: registry.connectivity(network.name), ...(Object.keys(metadata).length > 0 ? { metadata } : {}) };
    },

    async *streamingChat(request, context) {
      const network = await networkOf(request.agentName, context);
      const filter = request.chatFilter?.chatFilterType ?? ChatFilterType.MINIMAL;
      const messages = await chats.start({
        network,
        text: request.userMessage?.text ?? "",
        mimeData: request.userMessage?.mimeData ?? [],
        slyData: request.slyData ?? {},
        chatContext: request.chatContext,
        metadata: context.values.get(requestMetadataKey),
        signal: context.signal,
        filter,
        ...principalOf(context),
      });
      context.values.get(streamStartKey)();
      const echo = filter === ChatFilterType.MAXIMAL ? { request } : {};
      for await (const message of filterChatMessages(messages, filter)) {
        yield { ...echo, response: message };
      }
      // A chat cut short (client gone, deadline, shutdown) must not end like a finished one.
      context.signal.throwIfAborted();
    },
  };
}

function principalOf(context: HandlerContext): { clientId?: string } {
  const name = context.values.get(principalKey)?.name;
  return name === undefined ? {} : { clientId: name };
}

/**
 * The network a call is about: the `agent_name` field, or neuro-san's `/<agent>.AgentService/<Method>` path. One the
 * caller may not see is answered exactly as one that does not exist, so that its existence does not leak.
 */
async function callableNetwork(registry: AgentRegistry, access: NetworkAccess, agentName: string, context: HandlerContext): Promise<AgentNetwork> {
  const name = agentName || context.values.get(pathAgentNameKey);
  if (!name) {
    throw invalidArgument("AGENT_NAME_REQUIRED", "agent_name is required", [
      { field: "agent_name", description: "name the agent network, in the field or in the method path" },
    ]);
  }
  if (!access.allows(context.values.get(principalKey)?.name, name)) throw agentNotFound(name);
  return registry.resolve(name);
}
