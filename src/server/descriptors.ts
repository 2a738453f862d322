import { createHash } from "node:crypto";
import { createRegistry, toBinary, type DescFile, type DescService } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema, file_google_protobuf_struct } from "@bufbuild/protobuf/wkt";
import { AgentOperationsService } from "../gen/axon/agent/v1/agent_pb.js";
import { TemporaryNetworkService } from "../gen/axon/networks/v1/temporary_networks_pb.js";
import { OperatorService } from "../gen/axon/operator/v1/operator_pb.js";
import { file_google_rpc_error_details } from "../gen/google/rpc/error_details_pb.js";
import { file_google_rpc_status } from "../gen/google/rpc/status_pb.js";
import { Health } from "../gen/grpc/health/v1/health_pb.js";
import { ServerReflection } from "../gen/grpc/reflection/v1/reflection_pb.js";
import { ServerReflection as ServerReflectionV1Alpha } from "../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { AgentService } from "../gen/neuro_san/api/grpc/agent_pb.js";
import { ConciergeService } from "../gen/neuro_san/api/grpc/concierge_pb.js";

/** The services whose `google.api.http` rules become REST routes and OpenAPI paths. */
export const restServices: readonly DescService[] = [ConciergeService, AgentService, AgentOperationsService, OperatorService, TemporaryNetworkService];

/** Every service this server answers, for reflection and health. */
export const servedServices: readonly DescService[] = [...restServices, Health, ServerReflection, ServerReflectionV1Alpha];

/** Every file a client may need to decode what we send, dependencies included. */
export const servedFiles: readonly DescFile[] = withDependencies([
  ...servedServices.map((service) => service.file),
  file_google_rpc_status,
  file_google_rpc_error_details,
  file_google_protobuf_struct,
]);

/** `sha256:<hex>` of the Agent V1 contract as served: its descriptors, so it changes exactly when the contract does. */
export const contractDigest = `sha256:${createHash("sha256")
  .update(Buffer.concat([AgentOperationsService.file, OperatorService.file].map((file) => toBinary(FileDescriptorProtoSchema, file.proto))))
  .digest("hex")}`;

/** The one type registry: protobuf JSON, google.protobuf.Any in error details, reflection. */
export const typeRegistry = createRegistry(...servedFiles);

function withDependencies(roots: DescFile[]): DescFile[] {
  const seen = new Map<string, DescFile>();
  const visit = (file: DescFile): void => {
    if (seen.has(file.name)) return;
    seen.set(file.name, file);
    file.dependencies.forEach(visit);
  };
  roots.forEach(visit);
  return [...seen.values()];
}
