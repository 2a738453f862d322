import type { DescService } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import type { ChatRunner } from "../agents/chat-runner.js";
import type { AgentRegistry } from "../agents/registry.js";
import { Health } from "../gen/grpc/health/v1/health_pb.js";
import { ServerReflection } from "../gen/grpc/reflection/v1/reflection_pb.js";
import { ServerReflection as ServerReflectionV1Alpha } from "../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { AgentService } from "../gen/neuro_san/api/grpc/agent_pb.js";
import { ConciergeService } from "../gen/neuro_san/api/grpc/concierge_pb.js";
import type { NetworkAccess } from "../auth/network-access.js";
import type { PrincipalSet } from "../auth/principals.js";
import { AgentOperationsService } from "../gen/axon/agent/v1/agent_pb.js";
import { TemporaryNetworkService } from "../gen/axon/networks/v1/temporary_networks_pb.js";
import { OperatorService } from "../gen/axon/operator/v1/operator_pb.js";
import type { OperationsBroker } from "../operations/broker.js";
import type { Transfers } from "../operations/transfers/transfers.js";
import type { TemporaryNetworks } from "../reservations/temporary-networks.js";
import type { Inference } from "../inference/inference.js";
import { agentOperationsService, type Descriptor } from "./agent-operations-service.js";
import { agentService } from "./agent-service.js";
import { operatorService } from "./operator-service.js";
import { temporaryNetworkService } from "./temporary-network-service.js";
import { conciergeService } from "./concierge-service.js";
import { servedFiles, servedServices } from "./descriptors.js";
import { healthService, type HealthState } from "./health.js";
import { reflectionServiceV1, reflectionServiceV1Alpha } from "./reflection.js";
import { refusingUnstorable } from "./strict/unstorable-fields.js";

export interface Services {
  registry: AgentRegistry;
  chats: ChatRunner;
  health: HealthState;
  operations: OperationsSurface;
}

/** Agent Operations V1, when the server runs it: the broker, the descriptor, and who may call. */
export interface OperationsSurface {
  broker: OperationsBroker;
  /** Sealed payloads and streams: plain HTTP routes carrying raw bytes, not RPCs. */
  transfers: Transfers;
  descriptor: Descriptor;
  principals: { clients: PrincipalSet; operators: PrincipalSet };
  /** Which agent networks each principal may see, on every way into a network. */
  access: NetworkAccess;
  /** Temporary networks (neuro-san's reservations), kept in the database. */
  temporaryNetworks: TemporaryNetworks;
  /** OpenAI's `/v1`: brokered models and agent networks as models. */
  inference: Inference;
}

/** A service and its implementation. */
export interface ServiceImplementation {
  readonly service: DescService;
  readonly implementation: Partial<ServiceImpl<DescService>>;
}

/** Every RPC service, implemented once; every transport (gRPC, Connect, gRPC-Web, REST) serves these same objects. */
export function serviceImplementations({ registry, chats, health, operations }: Services): ServiceImplementation[] {
  return [
    implement(ConciergeService, conciergeService(registry, operations.access)),
    implement(AgentService, agentService(registry, chats, operations.access)),
    implement(AgentOperationsService, refusingUnstorable(AgentOperationsService, agentOperationsService(operations.broker, operations.descriptor))),
    implement(OperatorService, refusingUnstorable(OperatorService, operatorService(operations.broker))),
    implement(TemporaryNetworkService, temporaryNetworkService(operations.temporaryNetworks)),
    implement(Health, healthService(health)),
    implement(ServerReflection, reflectionServiceV1(servedFiles, servedServices)),
    implement(ServerReflectionV1Alpha, reflectionServiceV1Alpha(servedFiles, servedServices)),
  ];
}

/** A service with its implementation, typed against each other. */
export function implement<T extends DescService>(service: T, implementation: ServiceImpl<T>): ServiceImplementation {
  return { service, implementation: implementation as Partial<ServiceImpl<DescService>> };
}
