import net from "node:net";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { describe, expect, it } from "vitest";
import { AgentService } from "../../src/gen/neuro_san/api/grpc/agent_pb.js";
import { ConciergeService } from "../../src/gen/neuro_san/api/grpc/concierge_pb.js";
import { listen } from "../../src/server/listener.js";
import { startTestServer } from "../support/server.js";
import { fixtureEnv } from "./expectations.js";

async function freePort(): Promise<number> {
  const server = net.createServer().listen(0, "127.0.0.1");
  await new Promise((resolve) => server.once("listening", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe("the listener", () => {
  it("AGENT_PORT serves the same handler as AGENT_HTTP_PORT", async () => {
    const grpcPort = await freePort();
    const server = await startTestServer({ env: { ...fixtureEnv, AGENT_PORT: String(grpcPort) } });
    try {
      expect(server.server.ports).toEqual([server.port, grpcPort]);
      const client = createClient(ConciergeService, createGrpcTransport({ baseUrl: `http://127.0.0.1:${grpcPort}` }));
      expect((await client.list({})).agents.map((agent) => agent.agentName)).toEqual(["greeter", "relay"]);
    } finally {
      await server.close();
    }
  });

  it("refuses a gRPC message over the size limit with RESOURCE_EXHAUSTED, and keeps serving", async () => {
    // The refused stream stays half-open while the client still sends: a short grace keeps close() quick.
    const server = await startTestServer({ env: { ...fixtureEnv, AXON_MAX_REQUEST_BYTES: "65536", AXON_SHUTDOWN_GRACE_SECONDS: "1" } });
    try {
      const agents = createClient(AgentService, createGrpcTransport({ baseUrl: server.url }));
      const error = await (async () => {
        for await (const _ of agents.streamingChat({ agentName: "greeter", userMessage: { text: "x".repeat(100_000) } }));
      })().then(() => undefined, (e: unknown) => ConnectError.from(e));
      expect(error?.code).toBe(Code.ResourceExhausted);
      expect((await agents.function({ agentName: "greeter" })).function?.description).toBe("Greets the user");
    } finally {
      await server.close();
    }
  });

  it("closes a connection that sends nothing", async () => {
    const listener = await listen(() => {}, { port: 0, host: "127.0.0.1", headersTimeoutMs: 200 });
    const socket = net.connect(listener.port, "127.0.0.1");
    const closedAfter = await new Promise<number>((resolve) => {
      const started = performance.now();
      socket.on("close", () => resolve(performance.now() - started));
    });
    expect(closedAfter).toBeGreaterThanOrEqual(150);
    await listener.close(1000);
  });

  it("tells HTTP/2 from HTTP/1.1 even when the first bytes arrive one at a time", async () => {
    const server = await startTestServer({ env: fixtureEnv });
    try {
      const socket = net.connect(server.port, "127.0.0.1");
      await new Promise((resolve) => socket.once("connect", resolve));
      const request = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
      for (const byte of request.slice(0, 2)) {
        socket.write(byte);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      socket.write(request.slice(2));
      const response = await new Promise<string>((resolve) => {
        let text = "";
        socket.on("data", (chunk) => (text += chunk));
        socket.on("end", () => resolve(text));
      });
      expect(response).toMatch(/^HTTP\/1.1 200/);
    } finally {
      await server.close();
    }
  });
});
