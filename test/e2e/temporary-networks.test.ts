import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { AgentService } from "../../src/gen/neuro_san/api/grpc/agent_pb.js";
import { TemporaryNetworkService } from "../../src/gen/axon/networks/v1/temporary_networks_pb.js";
import { finalOf, restChat } from "../support/chat-protocols.js";
import { manualClock } from "../support/manual-clock.js";
import { alice, bearer, bob, roomyAdmission, writeFiles } from "../support/operations.js";
import { ScriptedLlm } from "../support/scripted-llm/scripted-llm.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { greeterSpec, neuroSan, reservingPolicy, temporaryNetworksApi, UUID } from "../support/temporary-networks.js";

type Json = Record<string, any>;


describe("temporary networks (neuro-san's reservations) on one server, with its clock in the test's hands", () => {
  const clock = manualClock(new Date("2026-12-04T12:00:00Z"));
  let llm: ScriptedLlm;
  let server: TestServer;
  let api: ReturnType<typeof temporaryNetworksApi>;
  let surface: ReturnType<typeof neuroSan>;

  beforeAll(async () => {
    llm = await ScriptedLlm.start("openai");
    server = await startTestServer({
      clock,
      env: { ...llm.env, ...writeFiles("http://127.0.0.1:1", roomyAdmission, reservingPolicy), AGENT_MAX_TEMP_NETWORKS: "2", AXON_TEMPORARY_NETWORK_MAX_SECONDS: "3600" },
    });
    api = temporaryNetworksApi(server.url);
    surface = neuroSan(server.url);
  });
  afterAll(async () => {
    await server?.close();
    await llm?.close();
  });
  beforeEach(async () => {
    llm.reset();
    // Each test starts with none served: what the last one left expires.
    clock.advance(3601_000);
  });

  it("is served on every protocol under its reserved name until it expires, then is NOT_FOUND everywhere", async () => {
    const created = await api.create(alice, { prefix: "designer", spec: greeterSpec("Greet in Welsh."), lifetime_seconds: 600, public: true });
    expect(created.status).toBe(201);
    const { name } = created.body.network;
    expect(name).toMatch(new RegExp(`^designer-${UUID}$`));
    expect(created.body.network).toMatchObject({ client_id: "alice", public: true, lifetime_seconds: 600, url: name });
    expect(created.body.network.expires_at).toBe(new Date(clock.now().getTime() + 600_000).toISOString().replace(".000", ""));

    expect(await surface.listed()).toContain(name);
    expect((await surface.function(name)).body).toEqual({ function: { description: "Greets." } });
    const grpc = createClient(AgentService, createGrpcTransport({ baseUrl: server.url }));
    expect((await grpc.connectivity({ agentName: name })).connectivityInfo.map((node) => node.origin)).toEqual(["Greeter"]);
    expect((await surface.mcpTools()).map((tool) => tool.title)).toContain(name);
    const answer = finalOf(await restChat(server, name, { user_message: { text: "Hello" } }));
    expect(answer).toMatchObject({ type: "AGENT_FRAMEWORK", text: "Answer: Hello" });
    expect(llm.requests[0]!.request.system).toBe("Greet in Welsh.");

    clock.advance(599_000);
    expect((await surface.function(name)).status).toBe(200);
    clock.advance(1_000);
    expect(await surface.listed()).not.toContain(name);
    expect(await surface.function(name)).toMatchObject({ status: 404, body: { code: 5 } });
    expect((await restChat(server, name, { user_message: { text: "Hello" } }))[0]).toMatchObject({ http_status: 404 });
    await expect(grpc.connectivity({ agentName: name })).rejects.toThrow(/not found/);
    expect((await surface.mcpTools()).map((tool) => tool.title)).not.toContain(name);
    expect((await api.get(alice, name)).status).toBe(404);
  });

  it("a private one is callable by its name but not listed; the lifetime asked is capped by the server's maximum", async () => {
    const { body } = await api.create(alice, { spec: greeterSpec("Greet."), lifetime_seconds: 1e9 });
    const { name } = body.network;
    expect(name).toMatch(new RegExp(`^${UUID}$`));
    expect(body.network.lifetime_seconds).toBe(3600);
    expect(await surface.listed()).not.toContain(name);
    expect((await surface.function(name)).status).toBe(200);
    expect(finalOf(await restChat(server, name, { user_message: { text: "Hi" } }))).toMatchObject({ text: "Answer: Hi" });
  });

  it("AGENT_MAX_TEMP_NETWORKS bounds how many are served at once: over it, RESOURCE_EXHAUSTED until one expires", async () => {
    const first = await api.create(alice, { spec: greeterSpec("One."), lifetime_seconds: 60 });
    await api.create(alice, { spec: greeterSpec("Two."), lifetime_seconds: 120 });
    const refused = await api.create(alice, { spec: greeterSpec("Three."), lifetime_seconds: 60 });
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("60");
    expect(refused.body).toMatchObject({ code: 8, details: expect.arrayContaining([expect.objectContaining({ reason: "TEMPORARY_NETWORKS_EXHAUSTED" })]) });
    expect((await api.list(alice)).body.networks).toHaveLength(2);

    clock.advance(60_000);
    expect((await surface.function(first.body.network.name)).status).toBe(404);
    expect((await api.create(alice, { spec: greeterSpec("Three."), lifetime_seconds: 60 })).status).toBe(201);
  });

  it("only whom the policy lets reserves: another client is PERMISSION_DENIED, no bearer UNAUTHENTICATED, a foreign prefix denied", async () => {
    expect(await api.create(bob, { spec: greeterSpec("No.") })).toMatchObject({ status: 403, body: { code: 7 } });
    expect((await api.create(alice, { prefix: "intruder", spec: greeterSpec("No.") })).status).toBe(403);
    expect((await api.create(undefined, { spec: greeterSpec("No.") })).status).toBe(401);
  });

  it("a spec that cannot be served, or a bad prefix or lifetime, is refused naming the field; nothing is stored", async () => {
    const broken = await api.create(alice, { spec: { tools: [{ name: "Front", tools: ["Missing"] }], toolbox_info_file: "/etc/passwd" } });
    expect(broken.status).toBe(400);
    const violations = broken.body.details.find((detail: Json) => detail["@type"]?.endsWith("BadRequest")).fieldViolations.map((violation: Json) => violation.field);
    expect(violations).toEqual(["spec.toolbox_info_file", "spec.tools[0].tools[0]"]);
    const bad = await api.create(alice, { prefix: "designer/x", spec: {}, lifetime_seconds: -1 });
    expect(bad.body.details.find((detail: Json) => detail["@type"]?.endsWith("BadRequest")).fieldViolations.map((violation: Json) => violation.field)).toEqual([
      "prefix",
      "lifetime_seconds",
      "spec",
    ]);
    expect((await api.list(alice)).body.networks ?? []).toEqual([]);
  });

  it("its owner reads, lists and deletes it; to anyone else it is not there; deleted, it is not served", async () => {
    const network = createClient(TemporaryNetworkService, createGrpcTransport({ baseUrl: server.url, interceptors: [bearer(alice)] }));
    const { network: created } = await network.createTemporaryNetwork({ prefix: "designer", spec: greeterSpec("Mine.") });
    const name = created!.name;
    expect((await api.get(alice, name)).body).toMatchObject({ name, spec: greeterSpec("Mine."), client_id: "alice" });
    expect((await api.list(alice)).body.networks.map((entry: Json) => [entry.name, entry.spec])).toEqual([[name, undefined]]);
    expect((await api.get(bob, name)).status).toBe(404);
    expect((await api.list(bob)).body.networks ?? []).toEqual([]);
    expect((await api.delete(bob, name)).status).toBe(404);

    expect((await api.delete(alice, name)).status).toBe(200);
    expect((await surface.function(name)).status).toBe(404);
    expect((await api.delete(alice, name)).status).toBe(404);
  });
});
