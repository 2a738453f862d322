import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { describe, expect, it } from "vitest";
import { ErrorInfoSchema } from "../../src/gen/google/rpc/error_details_pb.js";
import { AgentService, ChatFilter_ChatFilterType as ChatFilterType } from "../../src/gen/neuro_san/api/grpc/agent_pb.js";
import { startAxonProcess } from "../support/axon-process.js";
import { ScriptedChats } from "../support/scripted-chat.js";
import { startTestServer } from "../support/server.js";
import { fixtureEnv } from "./expectations.js";

describe("graceful shutdown", () => {
  it("lets a stream finish within the grace period and refuses new connections", async () => {
    const server = await startTestServer({ env: { ...fixtureEnv, AXON_SHUTDOWN_GRACE_SECONDS: "5" }, chats: new ScriptedChats() });
    const agents = createClient(AgentService, createGrpcTransport({ baseUrl: server.url }));
    const stream = agents.streamingChat({
      agentName: "greeter",
      userMessage: { text: "slow 5" },
      chatFilter: { chatFilterType: ChatFilterType.MAXIMAL },
    });
    const iterator = stream[Symbol.asyncIterator]();
    await iterator.next();
    const closing = server.close();
    expect(server.health.ready).toBe(false);
    const rest = [];
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) rest.push(next.value);
    expect(rest.at(-1)?.response?.text).toBe("echo slow 5 (turn 1)");
    await closing;
    await expect(fetch(`${server.url}/healthz`)).rejects.toThrow();
  });

  it("cancels streams still running when the grace period ends", async () => {
    const chats = new ScriptedChats();
    const server = await startTestServer({ env: { ...fixtureEnv, AXON_SHUTDOWN_GRACE_SECONDS: "1" }, chats });
    const agents = createClient(AgentService, createGrpcTransport({ baseUrl: server.url }));
    const iterator = agents
      .streamingChat({ agentName: "greeter", userMessage: { text: "hang" }, chatFilter: { chatFilterType: ChatFilterType.MAXIMAL } })
      [Symbol.asyncIterator]();
    await iterator.next();
    const started = performance.now();
    await server.close();
    expect(performance.now() - started).toBeGreaterThanOrEqual(900);
    const error = await (async () => {
      for (let next = await iterator.next(); !next.done; next = await iterator.next());
    })().then(() => undefined, (e: unknown) => ConnectError.from(e));
    expect(error?.code).toBe(Code.Unavailable);
    // Even the protocol layer's own errors carry an ErrorInfo with their category.
    expect(error?.findDetails(ErrorInfoSchema)).toEqual([expect.objectContaining({ reason: "UNAVAILABLE", metadata: { category: "unavailable" } })]);
    expect(chats.cancelled).toHaveLength(1);
  });

  it("the process drains and exits 0 on SIGTERM", async () => {
    const axon = await startAxonProcess(fixtureEnv);
    try {
      expect(axon.started.networks).toEqual(["greeter", "relay"]);
      expect((await fetch(`${axon.url}/readyz`)).status).toBe(200);
      expect(await axon.stop()).toBe(0);
      expect(axon.logs.map((entry) => entry.msg)).toEqual(expect.arrayContaining(["draining", "stopped"]));
    } finally {
      await axon.stop();
    }
  });
});
