import type { JsonObject } from "@bufbuild/protobuf";
import type { AgentRegistry } from "../agents/registry.js";
import type { NetworkAccess } from "../auth/network-access.js";
import type { NativeCalls } from "../operations/native-calls.js";
import type { Inference } from "./inference.js";
import { listOperation, upstreamTarget } from "./native-operations.js";
import { listedNetworkModels } from "./network-models.js";

export interface ModelListContext {
  inference: Inference;
  native: Pick<NativeCalls, "request">;
  registry: Pick<AgentRegistry, "listPublic" | "listMcp" | "get">;
  access: NetworkAccess;
}

/**
 * What `GET /v1/models` lists for a client: the agent networks it may see, then the models of each upstream whose
 * `inference.models.list` policy allows it, as the upstream lists them. An upstream it may not list is left out.
 */
export async function modelsFor(clientId: string, context: ModelListContext): Promise<JsonObject[]> {
  const { inference, native, registry, access } = context;
  const networks = listedNetworkModels(registry, access, clientId).map(({ id }) => ({ id, object: "model", created: 0, owned_by: "axon" }));
  const upstreams = await Promise.all(
    inference.upstreams.all.map(async (upstream) => {
      const decision = await native.request({
        clientId,
        operation: listOperation,
        target: upstreamTarget(upstream.name),
        detail: { upstream: upstream.name },
        summary: `list the models of ${upstream.name}`,
      });
      if (decision.effect !== "allowed") return [];
      const models = await inference.models.of(upstream);
      await decision.finish({ ok: true, detail: { models: models.length } });
      return models;
    }),
  );
  return [...networks, ...upstreams.flat()];
}
