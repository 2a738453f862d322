import http from "node:http";
import * as grpc from "@grpc/grpc-js";
import type { Call } from "./load.js";

const identity = (bytes: Buffer): Buffer => bytes;

/** A gRPC client that sends and returns raw message bytes, so no protobuf work on the client skews the figures. */
export class RawGrpcClient {
  private readonly client: grpc.Client;

  constructor(address: string) {
    this.client = new grpc.Client(address, grpc.credentials.createInsecure());
  }

  unary(method: string, request: Buffer): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      this.client.makeUnaryRequest(method, identity, identity, request, (error, response) =>
        error || !response ? reject(error ?? new Error("no response")) : resolve(response),
      );
    });
  }

  caller(method: string, request: Buffer): Call {
    return async () => void (await this.unary(method, request));
  }

  close(): void {
    this.client.close();
  }
}

export interface HttpRequestSpec {
  method: "GET" | "POST";
  path: string;
  headers?: Record<string, string>;
  body?: Buffer;
}

export interface HttpReply {
  status: number;
  contentType: string;
  body: Buffer;
}

/** HTTP/1.1 over keep-alive sockets, one socket per concurrent caller, as a browser or a service client would. */
export class KeepAliveHttpClient {
  private readonly agent: http.Agent;

  constructor(
    private readonly origin: { host: string; port: number },
    concurrency: number,
  ) {
    this.agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  }

  send(spec: HttpRequestSpec): Promise<HttpReply> {
    return new Promise((resolve, reject) => {
      const request = http.request(
        { ...this.origin, agent: this.agent, method: spec.method, path: spec.path, headers: spec.headers },
        (response) => {
          const chunks: Buffer[] = [];
          response.on("data", (chunk: Buffer) => chunks.push(chunk));
          response.on("error", reject);
          response.on("end", () =>
            resolve({
              status: response.statusCode ?? 0,
              contentType: response.headers["content-type"] ?? "",
              body: Buffer.concat(chunks),
            }),
          );
        },
      );
      request.on("error", reject);
      request.end(spec.body);
    });
  }

  caller(spec: HttpRequestSpec): Call {
    return async () => {
      const reply = await this.send(spec);
      if (reply.status !== 200) throw new Error(`HTTP ${reply.status}: ${reply.body.toString().slice(0, 200)}`);
    };
  }

  close(): void {
    this.agent.destroy();
  }
}
