import { create, toBinary, type DescFile, type DescService } from "@bufbuild/protobuf";
import { nestedTypes } from "@bufbuild/protobuf/reflect";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { Code, type ServiceImpl } from "@connectrpc/connect";
import {
  ServerReflection,
  ServerReflectionResponseSchema,
} from "../gen/grpc/reflection/v1/reflection_pb.js";
import {
  ServerReflection as ServerReflectionV1Alpha,
  ServerReflectionResponseSchema as ServerReflectionResponseSchemaV1Alpha,
} from "../gen/grpc/reflection/v1alpha/reflection_pb.js";

/** v1 and v1alpha carry the same request; only the message type names differ. */
interface ReflectionRequest {
  host: string;
  messageRequest:
    | { case: "fileByFilename" | "fileContainingSymbol" | "allExtensionNumbersOfType" | "listServices"; value: string }
    | { case: "fileContainingExtension"; value: { containingType: string; extensionNumber: number } }
    | { case: undefined; value?: undefined };
}

/** The `message_response` oneof, shaped so that either version's schema accepts it. */
type ReflectionAnswer =
  | { case: "fileDescriptorResponse"; value: { fileDescriptorProto: Uint8Array[] } }
  | { case: "allExtensionNumbersResponse"; value: { baseTypeName: string; extensionNumber: number[] } }
  | { case: "listServicesResponse"; value: { service: { name: string }[] } }
  | { case: "errorResponse"; value: { errorCode: number; errorMessage: string } };

/** grpc.reflection.v1.ServerReflection over the given descriptors (dependencies are followed). */
export function reflectionServiceV1(
  files: readonly DescFile[],
  services: readonly DescService[],
): ServiceImpl<typeof ServerReflection> {
  const index = lazyIndex(files, services);
  return {
    async *serverReflectionInfo(requests) {
      for await (const request of requests) {
        yield create(ServerReflectionResponseSchema, {
          validHost: request.host,
          originalRequest: request,
          messageResponse: index().answer(request),
        });
      }
    },
  };
}

/** grpc.reflection.v1alpha.ServerReflection: the version grpcurl and older clients still ask for first. */
export function reflectionServiceV1Alpha(
  files: readonly DescFile[],
  services: readonly DescService[],
): ServiceImpl<typeof ServerReflectionV1Alpha> {
  const index = lazyIndex(files, services);
  return {
    async *serverReflectionInfo(requests) {
      for await (const request of requests) {
        yield create(ServerReflectionResponseSchemaV1Alpha, {
          validHost: request.host,
          originalRequest: request,
          messageResponse: index().answer(request),
        });
      }
    },
  };
}

// Indexing every descriptor takes tens of milliseconds: done on the first reflection request, not at start-up.
function lazyIndex(files: readonly DescFile[], services: readonly DescService[]): () => DescriptorIndex {
  let index: DescriptorIndex | undefined;
  return () => (index ??= new DescriptorIndex(files, services));
}

/** Every name a reflection client may ask about, resolved once. */
class DescriptorIndex {
  private readonly serviceNames: { name: string }[];
  private readonly filesByName = new Map<string, DescFile>();
  private readonly fileBySymbol = new Map<string, DescFile>();
  private readonly messageNames = new Set<string>();
  /** extendee full name -> extension number -> the file declaring the extension */
  private readonly extensionsByExtendee = new Map<string, Map<number, DescFile>>();
  /** file name -> the file and its transitive dependencies, serialized, the file first */
  private readonly descriptorsWithDependencies = new Map<string, Uint8Array[]>();

  constructor(files: readonly DescFile[], services: readonly DescService[]) {
    this.serviceNames = services.map((service) => ({ name: service.typeName }));
    files.forEach((file) => this.addFile(file));
    const serialized = new Map(
      [...this.filesByName.values()].map((file) => [file, toBinary(FileDescriptorProtoSchema, file.proto)]),
    );
    for (const file of this.filesByName.values()) {
      const closure = withTransitiveDependencies(file);
      this.descriptorsWithDependencies.set(file.proto.name, closure.map((each) => serialized.get(each)!));
    }
  }

  answer(request: ReflectionRequest): ReflectionAnswer {
    const { messageRequest } = request;
    switch (messageRequest.case) {
      case "listServices":
        return { case: "listServicesResponse", value: { service: this.serviceNames } };
      case "fileByFilename":
        return this.fileResponse(this.filesByName.get(messageRequest.value), `file ${messageRequest.value} not found`);
      case "fileContainingSymbol":
        return this.fileResponse(this.fileBySymbol.get(messageRequest.value), `symbol ${messageRequest.value} not found`);
      case "fileContainingExtension": {
        const { containingType, extensionNumber } = messageRequest.value;
        return this.fileResponse(
          this.extensionsByExtendee.get(containingType)?.get(extensionNumber),
          `extension ${extensionNumber} of ${containingType} not found`,
        );
      }
      case "allExtensionNumbersOfType": {
        const typeName = messageRequest.value;
        if (!this.messageNames.has(typeName)) return notFound(`type ${typeName} not found`);
        const numbers = [...(this.extensionsByExtendee.get(typeName)?.keys() ?? [])].sort((a, b) => a - b);
        return { case: "allExtensionNumbersResponse", value: { baseTypeName: typeName, extensionNumber: numbers } };
      }
      case undefined:
        return { case: "errorResponse", value: { errorCode: Code.InvalidArgument, errorMessage: "empty request" } };
    }
  }

  private fileResponse(file: DescFile | undefined, notFoundMessage: string): ReflectionAnswer {
    const descriptors = file && this.descriptorsWithDependencies.get(file.proto.name);
    if (!descriptors) return notFound(notFoundMessage);
    return { case: "fileDescriptorResponse", value: { fileDescriptorProto: descriptors } };
  }

  private addFile(file: DescFile): void {
    // Clients ask by import path ("google/protobuf/struct.proto"); DescFile.name drops the suffix.
    const fileName = file.proto.name;
    if (this.filesByName.has(fileName)) return;
    this.filesByName.set(fileName, file);
    file.dependencies.forEach((dependency) => this.addFile(dependency));

    for (const type of nestedTypes(file)) {
      this.addSymbol(type.typeName, file);
      switch (type.kind) {
        case "message":
          this.messageNames.add(type.typeName);
          type.fields.forEach((field) => this.addSymbol(`${type.typeName}.${field.name}`, file));
          type.oneofs.forEach((oneof) => this.addSymbol(`${type.typeName}.${oneof.name}`, file));
          // protobuf-es hides map entry messages, but they are real types a client may name.
          type.proto.nestedType
            .filter((nested) => nested.options?.mapEntry)
            .forEach((entry) => this.addSymbol(`${type.typeName}.${entry.name}`, file));
          break;
        case "enum": {
          // Protobuf scopes enum values beside their enum (C++ rules), so `pkg.VALUE` is the canonical name.
          const enclosingScope = type.parent?.typeName ?? file.proto.package;
          for (const value of type.values) {
            this.addSymbol(enclosingScope ? `${enclosingScope}.${value.name}` : value.name, file);
            this.addSymbol(`${type.typeName}.${value.name}`, file);
          }
          break;
        }
        case "service":
          type.methods.forEach((method) => this.addSymbol(`${type.typeName}.${method.name}`, file));
          break;
        case "extension": {
          const byNumber = this.extensionsByExtendee.get(type.extendee.typeName) ?? new Map<number, DescFile>();
          if (!byNumber.has(type.number)) byNumber.set(type.number, file);
          this.extensionsByExtendee.set(type.extendee.typeName, byNumber);
          break;
        }
      }
    }
  }

  private addSymbol(name: string, file: DescFile): void {
    if (!this.fileBySymbol.has(name)) this.fileBySymbol.set(name, file);
  }
}

function notFound(errorMessage: string): ReflectionAnswer {
  return { case: "errorResponse", value: { errorCode: Code.NotFound, errorMessage } };
}

/** The file first, then every file it imports, directly or not, each once. */
function withTransitiveDependencies(file: DescFile): DescFile[] {
  const seen = new Set<DescFile>();
  const visit = (each: DescFile): void => {
    if (seen.has(each)) return;
    seen.add(each);
    each.dependencies.forEach(visit);
  };
  visit(file);
  return [...seen];
}
