import type { ServiceImpl } from "@connectrpc/connect";
import type { AgentRegistry } from "../agents/registry.js";
import type { ConciergeService } from "../gen/neuro_san/api/grpc/concierge_pb.js";

export function conciergeService(registry: AgentRegistry): ServiceImpl<typeof ConciergeService> {
  return {
    list() {
      return { agents: registry.listPublic() };
    },
  };
}
