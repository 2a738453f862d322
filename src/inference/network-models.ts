import type { AgentNetwork } from "../agents/agent-network.js";
import type { AgentListing } from "../agents/connectivity.js";
import type { AgentRegistry } from "../agents/registry.js";
import { safeToolName } from "../agents/tool-names.js";
import type { NetworkAccess } from "../auth/network-access.js";

/** The models that are agent networks: `axon/<network>`. No upstream can serve a name under it. */
export const networkModelPrefix = "axon/";

type Registry = Pick<AgentRegistry, "listPublic" | "listMcp" | "get">;

/** Model id -> network name, for one set of public networks (the registry hands out the same list until it reloads). */
const modelIdsByListing = new WeakMap<readonly AgentListing[], ReadonlyMap<string, string>>();

/**
 * Each public network as a model: `axon/<network>`, or `axon/<mcp_name>` when the manifest gives it one. Both ids
 * are accepted in a request; the list shows the one.
 */
function modelIds(registry: Registry): ReadonlyMap<string, string> {
  const listings = registry.listPublic();
  let ids = modelIdsByListing.get(listings);
  if (ids === undefined) {
    const mcpNames = new Map(registry.listMcp().map((listing) => [listing.agentName, listing.toolName]));
    const byId = new Map<string, string>();
    for (const { agentName } of listings) {
      const mcpName = mcpNames.get(agentName);
      byId.set(networkModelPrefix + (mcpName !== undefined && mcpName !== safeToolName(agentName) ? mcpName : agentName), agentName);
    }
    ids = byId;
    modelIdsByListing.set(listings, ids);
  }
  return ids;
}

/** The networks `clientId` may see, as models, in manifest order. */
export function listedNetworkModels(registry: Registry, access: NetworkAccess, clientId: string): { id: string; network: string }[] {
  return [...modelIds(registry)].filter(([, network]) => access.allows(clientId, network)).map(([id, network]) => ({ id, network }));
}

/** The network a model names, if `clientId` may see it; one it may not is answered as one that does not exist. */
export function networkOfModel(registry: Registry, access: NetworkAccess, clientId: string, model: string): AgentNetwork | undefined {
  const ids = modelIds(registry);
  const name = ids.get(model) ?? [...ids.values()].find((network) => networkModelPrefix + network === model);
  return name !== undefined && access.allows(clientId, name) ? registry.get(name) : undefined;
}
