import http from "node:http";
import path from "node:path";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { serveParent } from "./server-process.js";

/**
 * The floor Axon is measured against: a bare @grpc/grpc-js server and a bare node:http server that answer with
 * bytes captured from Axon, so the only difference left is the work Axon does per request. Beside them, the gRPC
 * server a user would write instead of Axon: grpc-js with @grpc/proto-loader, encoding the List answer on every call.
 */
export interface CannedResponses {
  grpc: { method: string; messageBase64: string };
  http: { method: string; path: string; contentType: string; bodyBase64: string }[];
}

export interface BaselinesReady {
  grpcPort: number;
  /** grpc-js + proto-loader answering ConciergeService.List. */
  protoLoaderPort: number;
  httpPort: number;
}

const canned = JSON.parse(process.env.BENCH_CANNED_RESPONSES ?? "") as CannedResponses;
const identity = (bytes: Buffer): Buffer => bytes;

const grpcServer = new grpc.Server();
const grpcMessage = Buffer.from(canned.grpc.messageBase64, "base64");
grpcServer.addService(
  {
    method: {
      path: canned.grpc.method,
      requestStream: false,
      responseStream: false,
      requestSerialize: identity,
      requestDeserialize: identity,
      responseSerialize: identity,
      responseDeserialize: identity,
    },
  },
  { method: (_call: unknown, callback: grpc.sendUnaryData<Buffer>) => callback(null, grpcMessage) },
);
const grpcPort = await new Promise<number>((resolve, reject) =>
  grpcServer.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (error, port) => (error ? reject(error) : resolve(port))),
);

// It answers the same agents, decoded once from Axon's bytes; proto-loader's serializer encodes them per call.
const projectRoot = path.resolve(import.meta.dirname, "..");
const definition = protoLoader.loadSync("neuro_san/api/grpc/concierge.proto", {
  includeDirs: [path.join(projectRoot, "proto"), path.join(projectRoot, "third_party")],
  keepCase: true,
});
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const conciergeService = (grpc.loadPackageDefinition(definition) as any).dev.cognizant_ai.neuro_san.api.grpc.concierge.ConciergeService
  .service as grpc.ServiceDefinition;
const listAnswer: unknown = conciergeService.List!.responseDeserialize(grpcMessage);
const protoLoaderServer = new grpc.Server();
protoLoaderServer.addService(conciergeService, { List: (_call: unknown, callback: grpc.sendUnaryData<unknown>) => callback(null, listAnswer) });
const protoLoaderPort = await new Promise<number>((resolve, reject) =>
  protoLoaderServer.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (error, port) => (error ? reject(error) : resolve(port))),
);

const httpRoutes = new Map(canned.http.map((route) => [`${route.method} ${route.path}`, { ...route, body: Buffer.from(route.bodyBase64, "base64") }]));
const httpServer = http.createServer((req, res) => {
  const route = httpRoutes.get(`${req.method} ${req.url}`);
  // Read the request to its end before answering, as any real handler must.
  req.resume();
  req.on("end", () => {
    if (!route) return void res.writeHead(404).end();
    res.writeHead(200, { "content-type": route.contentType, "content-length": route.body.length });
    res.end(route.body);
  });
});
await new Promise<void>((resolve) => httpServer.listen(0, "127.0.0.1", resolve));
const httpPort = (httpServer.address() as { port: number }).port;

serveParent({ grpcPort, protoLoaderPort, httpPort } satisfies BaselinesReady, async () => {
  httpServer.closeAllConnections();
  httpServer.close();
  grpcServer.forceShutdown();
  protoLoaderServer.forceShutdown();
});
