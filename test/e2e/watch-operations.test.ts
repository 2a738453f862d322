import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentOperationsService, type Operation } from "../../src/gen/axon/agent/v1/agent_pb.js";
import { alice, bearer, bob, httpOp, operationsApi, roomyAdmission, writeFiles } from "../support/operations.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { until } from "../support/wait.js";

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({ env: writeFiles("http://127.0.0.1:9", roomyAdmission) });
});
afterAll(async () => {
  await server?.close();
});

const asClient = (secret: string) => {
  return createClient(AgentOperationsService, createConnectTransport({ baseUrl: server.url, httpVersion: "1.1", interceptors: [bearer(secret)] }));
};

describe("WatchOperations", () => {
  it("streams the caller's own operations as they are submitted and change, as summaries, and never another client's", async () => {
    const api = operationsApi(server.url);
    const seen: Operation[] = [];
    const abort = new AbortController();
    const watching = (async () => {
      for await (const { operation } of asClient(alice).watchOperations({}, { signal: abort.signal })) if (operation) seen.push(operation);
    })().catch(() => undefined);

    // The watch starts from the moment the server takes it: submit until one arrives, and from then on nothing is missed.
    let attempt = 0;
    await until(async () => {
      await api.post(alice, httpOp(`watch-warmup-${attempt++}`));
      return seen.length > 0;
    }, "the watch to start");

    const bobs = await api.post(bob, httpOp("watch-bob"));
    const mine = await api.post(alice, httpOp("watch-mine"));
    const arrived = await until(() => seen.find((operation) => operation.id === mine.body.id), "alice's operation to arrive");
    expect(arrived).toMatchObject({ state: "pending", operation: "http.request", idempotencyKey: "watch-mine", clientId: "alice" });
    // A summary: what ListOperations shows, without target, arguments or result.
    expect(arrived.target).toBeUndefined();
    expect(arrived.arguments).toBeUndefined();

    await api.call("POST", `/api/agent/v1/operations/${mine.body.id}/cancel`, alice, {});
    await until(() => seen.some((operation) => operation.id === mine.body.id && operation.state === "canceled"), "the cancel to arrive");
    // Events come in order: bob's came before alice's last ones, so it would have arrived by now.
    expect(seen.some((operation) => operation.id === bobs.body.id || operation.clientId !== "alice")).toBe(false);
    abort.abort();
    await watching;
  });

  it("needs a client secret", async () => {
    const stream = asClient("not-a-secret-of-anyone-not-a-secret").watchOperations({});
    await expect(stream[Symbol.asyncIterator]().next()).rejects.toMatchObject({ code: 16 });
  });
});
