import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { TemporaryNetworkSchema, type TemporaryNetworkService } from "../gen/axon/networks/v1/temporary_networks_pb.js";
import type { TemporaryNetwork, TemporaryNetworks } from "../reservations/temporary-networks.js";
import { httpStatusKey, principalKey } from "./context.js";

/** Temporary networks: protobuf in, reservation calls, protobuf out; the caller is always the authenticated client. */
export function temporaryNetworkService(networks: TemporaryNetworks): ServiceImpl<typeof TemporaryNetworkService> {
  return {
    async createTemporaryNetwork(request, context) {
      const { network, warnings } = await networks.create(clientOf(context), {
        prefix: request.prefix,
        spec: request.spec,
        lifetimeSeconds: request.lifetimeSeconds,
        public: request.public,
      });
      context.values.set(httpStatusKey, 201);
      return { network: messageOf(network), warnings };
    },

    async listTemporaryNetworks(_request, context) {
      return { networks: (await networks.list(clientOf(context))).map((network) => messageOf(network, { summary: true })) };
    },

    async getTemporaryNetwork(request, context) {
      return { network: messageOf(await networks.get(clientOf(context), request.name)) };
    },

    async deleteTemporaryNetwork(request, context) {
      await networks.delete(clientOf(context), request.name);
      return {};
    },
  };
}

function clientOf(context: HandlerContext): string {
  return context.values.get(principalKey)!.name;
}

/** A list entry leaves out the spec. */
function messageOf(network: TemporaryNetwork, options: { summary?: boolean } = {}) {
  return create(TemporaryNetworkSchema, {
    name: network.name,
    clientId: network.clientId,
    ...(options.summary ? {} : { spec: network.spec }),
    public: network.public,
    createdAt: timestampFromDate(network.createdAt),
    expiresAt: timestampFromDate(network.expiresAt),
    lifetimeSeconds: (network.expiresAt.getTime() - network.createdAt.getTime()) / 1000,
    url: network.url,
  });
}
