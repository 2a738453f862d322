import type { DescMethod } from "@bufbuild/protobuf";
import { createServiceImplSpec, type MethodImplSpec } from "@connectrpc/connect";
import { AgentService } from "../gen/neuro_san/api/grpc/agent_pb.js";
import type { ServiceImplementation } from "./routes.js";

/** The method a request path names; neuro-san's legacy paths name an agent too. */
export interface ResolvedMethod {
  readonly spec: MethodImplSpec;
  readonly pathAgentName: string | undefined;
}

// neuro-san's own gRPC clients put the agent in the service name: `/<agent>.AgentService/<Method>`.
const legacyAgentPath = /^\/([A-Za-z0-9_-]+)\.AgentService\/([A-Za-z]+)$/;

/** Every RPC method by its request path (`/package.Service/Method`), from the service implementations. */
export class RpcMethods {
  private readonly byPath = new Map<string, ResolvedMethod>();
  private readonly byMethod = new Map<DescMethod, MethodImplSpec>();

  constructor(implementations: readonly ServiceImplementation[]) {
    for (const { service, implementation } of implementations) {
      for (const spec of Object.values(createServiceImplSpec(service, implementation).methods)) {
        this.byPath.set(requestPath(spec.method), { spec, pathAgentName: undefined });
        this.byMethod.set(spec.method, spec);
      }
    }
  }

  resolve(path: string): ResolvedMethod | undefined {
    const found = this.byPath.get(path);
    if (found !== undefined) return found;
    // Only what may be a legacy path meets its pattern: not REST's paths, which most calls are.
    const legacy = path.includes(".AgentService/") ? legacyAgentPath.exec(path) : null;
    const legacySpec = legacy && this.byPath.get(`/${AgentService.typeName}/${legacy[2]}`)?.spec;
    return legacySpec ? { spec: legacySpec, pathAgentName: legacy[1] } : undefined;
  }

  of(method: DescMethod): MethodImplSpec | undefined {
    return this.byMethod.get(method);
  }
}

export function requestPath(method: DescMethod): string {
  return `/${method.parent.typeName}/${method.name}`;
}
