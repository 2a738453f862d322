import { execFile } from "node:child_process";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { promisify } from "node:util";
import { create, fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { createClient, type Client } from "@connectrpc/connect";
import { connectNodeAdapter, createGrpcTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Health } from "../../src/gen/grpc/health/v1/health_pb.js";
import {
  ExtensionRequestSchema,
  ServerReflection,
  type ServerReflectionRequest,
  type ServerReflectionResponse,
} from "../../src/gen/grpc/reflection/v1/reflection_pb.js";
import { ServerReflection as ServerReflectionV1Alpha } from "../../src/gen/grpc/reflection/v1alpha/reflection_pb.js";
import { servedFiles, servedServices } from "../../src/server/descriptors.js";
import { HealthState, healthService, ServingStatus } from "../../src/server/health.js";
import { reflectionServiceV1, reflectionServiceV1Alpha } from "../../src/server/reflection.js";

const agentService = "dev.cognizant_ai.neuro_san.api.grpc.agent.AgentService";
const bufBinary = new URL("../../node_modules/.bin/buf", import.meta.url).pathname;
const healthProto = new URL("../../third_party/grpc/health/v1/health.proto", import.meta.url).pathname;
const runFile = promisify(execFile);

interface RunningServer {
  port: number;
  close(): Promise<void>;
}

async function startServer(state: HealthState): Promise<RunningServer> {
  const server = http2.createServer(
    connectNodeAdapter({
      routes(router) {
        router.service(Health, healthService(state));
        router.service(ServerReflection, reflectionServiceV1(servedFiles, servedServices));
        router.service(ServerReflectionV1Alpha, reflectionServiceV1Alpha(servedFiles, servedServices));
      },
    }),
  );
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        sessions.forEach((session) => session.destroy());
      }),
  };
}

// grpc-js with a client built from the .proto at run time: a client that shares no code with the server.
interface HealthClient extends grpc.Client {
  check(request: { service: string }, callback: (error: grpc.ServiceError | null, response?: { status: string }) => void): void;
  watch(request: { service: string }): grpc.ClientReadableStream<{ status: string }>;
  list(request: object, callback: (error: grpc.ServiceError | null, response?: { statuses: Record<string, { status: string }> }) => void): void;
}

function grpcJsHealthClient(port: number): HealthClient {
  const definition = protoLoader.loadSync(healthProto, { enums: String, defaults: true });
  const packageObject = grpc.loadPackageDefinition(definition) as unknown as {
    grpc: { health: { v1: { Health: new (address: string, credentials: grpc.ChannelCredentials) => HealthClient } } };
  };
  return new packageObject.grpc.health.v1.Health(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
}

function check(client: HealthClient, service: string): Promise<string> {
  return new Promise((resolve, reject) =>
    client.check({ service }, (error, response) => (error ? reject(error) : resolve(response!.status))),
  );
}

async function bufCurl(...args: string[]): Promise<string> {
  const { stdout } = await runFile(bufBinary, ["curl", "--protocol", "grpc", "--http2-prior-knowledge", ...args], {
    timeout: 20_000,
  });
  return stdout;
}

describe("grpc.health.v1 and server reflection, served over h2c", () => {
  const state = new HealthState();
  let server: RunningServer;
  let baseUrl: string;
  let healthClient: HealthClient;

  beforeAll(async () => {
    state.markReady();
    server = await startServer(state);
    baseUrl = `http://127.0.0.1:${server.port}`;
    healthClient = grpcJsHealthClient(server.port);
  });

  afterAll(async () => {
    healthClient.close();
    await server.close();
  });

  describe("health, asked by grpc-js", () => {
    it("reports the whole server and each served service as SERVING once ready", async () => {
      expect(await check(healthClient, "")).toBe("SERVING");
      expect(await check(healthClient, "grpc.health.v1.Health")).toBe("SERVING");
      expect(await check(healthClient, agentService)).toBe("SERVING");
    });

    it("answers NOT_FOUND for a service it does not serve", async () => {
      await expect(check(healthClient, "no.such.Service")).rejects.toMatchObject({ code: grpc.status.NOT_FOUND });
    });

    it("lists the status of the server and of every served service", async () => {
      const statuses = await new Promise<Record<string, { status: string }>>((resolve, reject) =>
        healthClient.list({}, (error, response) => (error ? reject(error) : resolve(response!.statuses))),
      );
      expect(Object.keys(statuses).sort()).toEqual(["", ...servedServices.map((service) => service.typeName)].sort());
      expect(Object.values(statuses).every(({ status }) => status === "SERVING")).toBe(true);
    });

    it("watching an unknown service streams SERVICE_UNKNOWN and stays open", async () => {
      const call = healthClient.watch({ service: "no.such.Service" });
      const first = await call[Symbol.asyncIterator]().next();
      expect(first.value).toEqual({ status: "SERVICE_UNKNOWN" });
      call.cancel();
    });
  });

  describe("health while draining", () => {
    it("a watcher sees SERVING at once, then NOT_SERVING when the server starts draining", async () => {
      const drainingState = new HealthState();
      drainingState.markReady();
      const drainingServer = await startServer(drainingState);
      const client = grpcJsHealthClient(drainingServer.port);
      try {
        const call = client.watch({ service: agentService });
        const updates = call[Symbol.asyncIterator]();
        expect((await updates.next()).value).toEqual({ status: "SERVING" });

        drainingState.markDraining();
        expect((await updates.next()).value).toEqual({ status: "NOT_SERVING" });
        expect(await check(client, "")).toBe("NOT_SERVING");

        call.cancel();
        await expect(updates.next()).rejects.toMatchObject({ code: grpc.status.CANCELLED });
      } finally {
        client.close();
        await drainingServer.close();
      }
    });
  });

  describe("reflection, asked by buf curl with no proto files", () => {
    it("calls Health.Check with the schema it learned from the server", async () => {
      const output = await bufCurl("-d", '{"service": ""}', `${baseUrl}/grpc.health.v1.Health/Check`);
      expect(JSON.parse(output)).toEqual({ status: "SERVING" });
    });

    it("lists the served services", async () => {
      const output = await bufCurl("--list-services", baseUrl);
      expect(output).toContain(agentService);
      expect(output).toContain("grpc.health.v1.Health");
      expect(output).toContain("grpc.reflection.v1.ServerReflection");
    });

    it("lists the methods of every service, resolving all of their dependencies", async () => {
      const output = await bufCurl("--list-methods", baseUrl);
      expect(output).toContain(`${agentService}/StreamingChat`);
      expect(output).toContain("grpc.health.v1.Health/Watch");
    });

    it("encodes an AgentService request from reflected descriptors alone (the call itself is not served here)", async () => {
      const call = bufCurl("-d", '{"agent_name": "hello"}', `${baseUrl}/${agentService}/Function`);
      // Only a schema resolved through every import (annotations, descriptor.proto, struct) gets as far as the server.
      await expect(call).rejects.toMatchObject({ stderr: expect.stringContaining('"code": "unimplemented"') });
    });

    it("works over the v1alpha protocol too", async () => {
      const output = await bufCurl("--reflect-protocol", "grpc-v1alpha", "--list-methods", baseUrl);
      expect(output).toContain(`${agentService}/StreamingChat`);
    });
  });

  describe("reflection, asked by a Connect gRPC client", () => {
    let reflection: Client<typeof ServerReflection>;

    beforeAll(() => {
      reflection = createClient(ServerReflection, createGrpcTransport({ baseUrl }));
    });

    /** One stream carrying all `requests`, as real clients do. */
    async function ask(...requests: ServerReflectionRequest["messageRequest"][]): Promise<ServerReflectionResponse[]> {
      async function* outgoing() {
        for (const messageRequest of requests) yield { host: "axon.test", messageRequest };
      }
      const responses: ServerReflectionResponse[] = [];
      for await (const response of reflection.serverReflectionInfo(outgoing())) responses.push(response);
      return responses;
    }

    function fileNames(response: ServerReflectionResponse | undefined): string[] {
      expect(response?.messageResponse.case).toBe("fileDescriptorResponse");
      if (response?.messageResponse.case !== "fileDescriptorResponse") return [];
      return response.messageResponse.value.fileDescriptorProto.map(
        (bytes) => fromBinary(FileDescriptorProtoSchema, bytes).name,
      );
    }

    function errorCode(response: ServerReflectionResponse | undefined): number | undefined {
      return response?.messageResponse.case === "errorResponse" ? response.messageResponse.value.errorCode : undefined;
    }

    it("a symbol's file comes with all of its transitive dependencies, well-known types included", async () => {
      const [response] = await ask({
        case: "fileContainingSymbol",
        value: "dev.cognizant_ai.neuro_san.api.grpc.agent.ChatRequest",
      });
      const names = fileNames(response);
      expect(names[0]).toBe("neuro_san/api/grpc/agent.proto");
      expect(names).toEqual(
        expect.arrayContaining([
          "neuro_san/api/grpc/chat.proto",
          "neuro_san/api/grpc/mime_data.proto",
          "google/protobuf/struct.proto",
          "google/api/annotations.proto",
          "google/api/http.proto",
          "google/protobuf/descriptor.proto",
        ]),
      );
      expect(new Set(names).size).toBe(names.length);
    });

    it("finds services, methods, fields, nested enums and enum values", async () => {
      const responses = await ask(
        { case: "fileContainingSymbol", value: "grpc.health.v1.Health" },
        { case: "fileContainingSymbol", value: "grpc.health.v1.Health.Watch" },
        { case: "fileContainingSymbol", value: "grpc.health.v1.HealthCheckRequest.service" },
        { case: "fileContainingSymbol", value: "grpc.health.v1.HealthCheckResponse.ServingStatus" },
        { case: "fileContainingSymbol", value: "grpc.health.v1.HealthCheckResponse.SERVING" },
        { case: "fileContainingSymbol", value: "grpc.health.v1.HealthListResponse.StatusesEntry" },
      );
      expect(responses.map((response) => fileNames(response)[0])).toEqual(
        Array(6).fill("grpc/health/v1/health.proto"),
      );
    });

    it("serves files by name, well-known types included", async () => {
      const [byName, wellKnown] = await ask(
        { case: "fileByFilename", value: "grpc/health/v1/health.proto" },
        { case: "fileByFilename", value: "google/protobuf/struct.proto" },
      );
      expect(fileNames(byName)).toEqual(["grpc/health/v1/health.proto"]);
      expect(fileNames(wellKnown)).toEqual(["google/protobuf/struct.proto"]);
    });

    it("finds extensions by the type they extend", async () => {
      const [numbers, extension, unextended] = await ask(
        { case: "allExtensionNumbersOfType", value: "google.protobuf.MethodOptions" },
        {
          case: "fileContainingExtension",
          value: create(ExtensionRequestSchema, { containingType: "google.protobuf.MethodOptions", extensionNumber: 72295728 }),
        },
        { case: "allExtensionNumbersOfType", value: "grpc.health.v1.HealthCheckRequest" },
      );
      expect(numbers?.messageResponse).toMatchObject({
        case: "allExtensionNumbersResponse",
        value: { baseTypeName: "google.protobuf.MethodOptions", extensionNumber: expect.arrayContaining([72295728]) },
      });
      expect(fileNames(extension)[0]).toBe("google/api/annotations.proto");
      expect(unextended?.messageResponse).toMatchObject({ value: { extensionNumber: [] } });
    });

    it("answers unknown names with NOT_FOUND on the same stream, which stays usable", async () => {
      const responses = await ask(
        { case: "fileContainingSymbol", value: "no.such.Message" },
        { case: "fileByFilename", value: "no/such.proto" },
        {
          case: "fileContainingExtension",
          value: create(ExtensionRequestSchema, { containingType: "google.protobuf.MethodOptions", extensionNumber: 1 }),
        },
        { case: "allExtensionNumbersOfType", value: "no.such.Message" },
        { case: "listServices", value: "" },
      );
      expect(responses.slice(0, 4).map(errorCode)).toEqual([5, 5, 5, 5]);
      expect(responses[4]?.messageResponse.case).toBe("listServicesResponse");
    });

    it("echoes the host and the original request", async () => {
      const [response] = await ask({ case: "listServices", value: "" });
      expect(response?.validHost).toBe("axon.test");
      expect(response?.originalRequest?.messageRequest).toEqual({ case: "listServices", value: "" });
      expect(response?.messageResponse.case === "listServicesResponse" && response.messageResponse.value.service.map((s) => s.name))
        .toEqual(servedServices.map((service) => service.typeName));
    });
  });
});

describe("HealthState", () => {
  it("is not ready, and every status is NOT_SERVING, until marked ready", () => {
    const state = new HealthState();
    expect(state.ready).toBe(false);
    expect(state.statusOf("")).toBe(ServingStatus.NOT_SERVING);
    state.markReady();
    expect(state.ready).toBe(true);
    expect(state.statusOf(agentService)).toBe(ServingStatus.SERVING);
    expect(state.statusOf("no.such.Service")).toBe(ServingStatus.SERVICE_UNKNOWN);
  });

  it("draining is final: marking ready again does not bring it back", () => {
    const state = new HealthState();
    state.markReady();
    state.markDraining();
    state.markReady();
    expect(state.ready).toBe(false);
    expect(state.statusOf("")).toBe(ServingStatus.NOT_SERVING);
  });

  it("a watch yields the current status, each change, and ends when its signal aborts", async () => {
    const state = new HealthState();
    const abort = new AbortController();
    const updates = state.watch("", abort.signal)[Symbol.asyncIterator]();
    expect(await updates.next()).toEqual({ done: false, value: ServingStatus.NOT_SERVING });

    const next = updates.next();
    state.markReady();
    expect(await next).toEqual({ done: false, value: ServingStatus.SERVING });

    const end = updates.next();
    abort.abort();
    expect(await end).toEqual({ done: true, value: undefined });
  });

  it("a change made while the watcher is busy is still delivered", async () => {
    const state = new HealthState();
    const updates = state.watch("", new AbortController().signal)[Symbol.asyncIterator]();
    await updates.next();
    state.markReady();
    expect(await updates.next()).toEqual({ done: false, value: ServingStatus.SERVING });
  });
});
