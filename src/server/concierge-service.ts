import type { ServiceImpl } from "@connectrpc/connect";
import type { AgentRegistry } from "../agents/registry.js";
import type { NetworkAccess } from "../auth/network-access.js";
import type { ConciergeService } from "../gen/neuro_san/api/grpc/concierge_pb.js";
import { principalKey } from "./context.js";

export function conciergeService(registry: AgentRegistry, access: NetworkAccess): ServiceImpl<typeof ConciergeService> {
  return {
    list(_request, context) {
      const caller = context.values.get(principalKey)?.name;
      return { agents: registry.listPublic().filter((listing) => access.allows(caller, listing.agentName)) };
    },
  };
}
