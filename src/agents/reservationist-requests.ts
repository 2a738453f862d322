import type { JsonObject } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { AxonError } from "../errors.js";
import { isJsonObject } from "../json.js";
import type { ChatSession } from "./chat-session.js";
import type { CallbackHandlers } from "./python/python-worker.js";

/**
 * What neuro-san's `reservationist` special arg asks of Axon from the Python worker (runner.py's AxonReservationist):
 * `deploy_reservations`, the networks it reserved, deployed as temporary networks owned by the network whose coded
 * tool or middleware made them. Only code whose spec says `allow.reservations` gets one, as in neuro-san.
 */
export function reservationistRequests(session: ChatSession): CallbackHandlers {
  return { deploy_reservations: (request) => deployReservations(session, request) };
}

async function deployReservations(session: ChatSession, request: JsonObject): Promise<JsonObject> {
  const deploy = session.services.deployTemporaryNetworks;
  if (deploy === undefined) throw new AxonError(Code.FailedPrecondition, "RESERVATIONS_UNAVAILABLE", "this process keeps no temporary networks");
  const written = Array.isArray(request.deployments) ? request.deployments.filter(isJsonObject) : [];
  const deployments = written.map((deployment) => ({
    name: String(deployment.name),
    lifetimeSeconds: Number(deployment.lifetime_seconds),
    spec: isJsonObject(deployment.spec) ? deployment.spec : {},
  }));
  const deployed = await deploy(`network:${session.network.name}`, deployments);
  return { networks: deployed.map(({ name, expiresAt }) => ({ name, expires_at: expiresAt.getTime() / 1000 })) };
}
