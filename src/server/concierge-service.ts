import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import type { AgentListing } from "../agents/connectivity.js";
import type { AgentRegistry } from "../agents/registry.js";
import type { NetworkAccess } from "../auth/network-access.js";
import { ConciergeResponseSchema, type ConciergeResponse, type ConciergeService } from "../gen/neuro_san/api/grpc/concierge_pb.js";
import { principalKey } from "./context.js";
import { frozen } from "./frozen-answers.js";

export function conciergeService(registry: AgentRegistry, access: NetworkAccess): ServiceImpl<typeof ConciergeService> {
  // List answers the same until the networks change: one frozen answer per set of networks a caller sees (not per
  // caller, whose names a token issuer may make without end), so the transports encode it once.
  const answers = new WeakMap<readonly AgentListing[], Map<string, ConciergeResponse>>();
  return {
    list(_request, context) {
      const listings = registry.listPublic();
      let byView = answers.get(listings);
      if (byView === undefined) answers.set(listings, (byView = new Map()));
      const caller = context.values.get(principalKey)?.name;
      const visible = access.isOpen ? listings : listings.filter((listing) => access.allows(caller, listing.agentName));
      const view = access.isOpen ? "" : visible.map((listing) => listing.agentName).join("\n");
      let answer = byView.get(view);
      if (answer === undefined) {
        const agents = visible.map((listing) => ({ ...listing, tags: [...listing.tags] }));
        byView.set(view, (answer = frozen(create(ConciergeResponseSchema, { agents }))));
      }
      return answer;
    },
  };
}
