import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ErrorInfoSchema } from "../../src/gen/google/rpc/error_details_pb.js";
import { AgentOperationsService } from "../../src/gen/axon/agent/v1/agent_pb.js";
import { OperatorService } from "../../src/gen/axon/operator/v1/operator_pb.js";
import { startAxonProcess, type AxonProcess } from "../support/axon-process.js";
import {
  alice,
  bearer,
  bob,
  chatOp,
  httpOp,
  operationsApi,
  operator,
  roomyAdmission,
  startUpstream,
  writeFiles,
} from "../support/operations.js";
import { createPostgresDatabase, type TestDatabase } from "../support/postgres-database.js";
import { ScriptedLlm } from "../support/scripted-llm/scripted-llm.js";
import { startTestServer } from "../support/server.js";

type Json = Record<string, any>;

let llm: ScriptedLlm;
let upstream: Awaited<ReturnType<typeof startUpstream>>;
beforeAll(async () => {
  llm = await ScriptedLlm.start("openai");
  upstream = await startUpstream();
});
afterAll(async () => {
  upstream.close();
  await llm.close();
});

describe.each(["sqlite", "postgresql"] as const)("operations lifecycle on %s", (provider) => {
  let database: TestDatabase | undefined;
  const cleanups: (() => Promise<unknown> | unknown)[] = [];
  beforeAll(async () => {
    database = provider === "postgresql" ? await createPostgresDatabase() : undefined;
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  afterAll(async () => {
    await database?.drop();
  });

  async function serve(admission: Json = roomyAdmission, policy?: Json, extra: Record<string, string> = {}) {
    const env = { ...llm.env, ...writeFiles(upstream.url, admission, policy), ...(database ? { DATABASE_URL: database.url } : {}), ...extra };
    const server = await startTestServer({ env });
    cleanups.push(() => server.close());
    return { server, env, api: operationsApi(server.url) };
  }

  it("admission limits are exact under 200 concurrent submits, refusals carry Retry-After, RetryInfo and QuotaFailure", async () => {
    const { api } = await serve({ ...roomyAdmission, clients: { alice: { client_pending: 10 } } });
    const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => api.post(alice, httpOp(`burst-${provider}-${i}`))));
    expect(answers.filter((answer) => answer.status === 202)).toHaveLength(10);
    const refused = answers.filter((answer) => answer.status === 429);
    expect(refused).toHaveLength(190);
    expect(refused[0]!.headers.get("retry-after")).toBe("2");
    expect(refused[0]!.body.details.map((detail: Json) => detail["@type"])).toEqual([
      "type.googleapis.com/google.rpc.ErrorInfo",
      "type.googleapis.com/google.rpc.RetryInfo",
      "type.googleapis.com/google.rpc.QuotaFailure",
    ]);
    expect(refused[0]!.body.details[0]).toMatchObject({ reason: "CLIENT_PENDING_LIMIT", metadata: { category: "rate_limited" } });
    // A refusal creates nothing and a correct retry (replay) is still answered.
    const replay = await api.post(alice, httpOp(`burst-${provider}-${answers.findIndex((answer) => answer.status === 202)}`));
    expect(replay.status).toBe(200);
    // Reads bypass admission.
    expect((await api.call("GET", "/api/agent/v1/operations", alice)).status).toBe(200);
  });

  it("the rate limit refuses with Retry-After up to the window's end", async () => {
    // bob: the window is counted in the database, which this describe's servers share, and alice was busy above.
    // Windows are fixed; the longest there is (it ends 2038-01-19T03:14:07Z) is one no run of this test crosses.
    const windowSeconds = 2_147_483_647;
    const secondsToWindowEnd = () => Math.ceil((windowSeconds * 1000 - (Date.now() % (windowSeconds * 1000))) / 1000);
    const { api } = await serve({ ...roomyAdmission, requests_per_window: 3, window_seconds: windowSeconds });
    const atStart = secondsToWindowEnd();
    for (let i = 0; i < 3; i++) expect((await api.post(bob, chatOp(`rate-${provider}-${i}`))).status).toBe(202);
    const refused = await api.post(bob, chatOp(`rate-${provider}-3`));
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeLessThanOrEqual(atStart);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(secondsToWindowEnd());
    expect(refused.body.details[0].reason).toBe("CLIENT_RATE_LIMIT");
  });

  it("a window grant approves later matching operations, one use each, until its uses run out", async () => {
    const policy = {
      rules: [
        {
          id: "upstream-window",
          effect: "request",
          operations: ["http.request"],
          grant_policy: { mode: "window", default_minutes: 10, max_minutes: 60, default_max_uses: 3, max_uses: 5 },
        },
      ],
    };
    const { api } = await serve(roomyAdmission, policy);
    const first = await api.post(alice, httpOp(`window-${provider}-1`, "/w"));
    const approved = await api.approve(first.body.id, { minutes: 5, max_uses: 2 });
    expect(approved.body).toMatchObject({ status: "active", mode: "window", minutes: 5, max_uses: 2, uses_remaining: 1, used_count: 1 });
    const second = await api.post(alice, httpOp(`window-${provider}-2`, "/w"));
    expect(second.body).toMatchObject({ state: "approved", approval_id: first.body.approval_id });
    const third = await api.post(alice, httpOp(`window-${provider}-3`, "/w"));
    expect(third.body.state).toBe("pending");
    expect(third.body.approval_id).not.toBe(first.body.approval_id);
    // Widening what was asked is refused.
    const widened = await api.approve(third.body.id, { minutes: 120 });
    expect(widened.status).toBe(400);
  });

  it("revoking an active window grant cancels what it approved that has not started, and stops further uses", async () => {
    const policy = {
      rules: [{ id: "w", effect: "request", operations: ["http.request"], grant_policy: { mode: "window", default_minutes: 10, default_max_uses: 5 } }],
    };
    const { api, server } = await serve(roomyAdmission, policy);
    const first = await api.post(alice, httpOp(`revoke-${provider}-1`, "/r"));
    const approved = await api.approve(first.body.id);
    const revoked = await api.json(
      await api.call("POST", `/api/operator/v1/requests/${approved.body.id}/revoke`, operator, { expected_revision: approved.body.revision }),
    );
    expect(revoked.body.status).toBe("revoked");
    const again = await api.post(alice, httpOp(`revoke-${provider}-2`, "/r"));
    expect(again.body.state).toBe("pending");
    const audit = await server.operations.database.prisma.auditRecord.findMany({ where: { grantId: approved.body.id } });
    expect(audit.map((record) => record.action)).toEqual(expect.arrayContaining(["request.created", "request.approved", "request.revoked"]));
  });

  it("the sweeper expires a pending approval past its time, and its operation with it", async () => {
    const { api, server } = await serve();
    const submitted = await api.post(alice, httpOp(`expire-${provider}`));
    const { prisma } = server.operations.database;
    await prisma.grant.update({ where: { id: submitted.body.approval_id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    expect(await server.operations.broker.sweep()).toBeGreaterThanOrEqual(1);
    expect((await api.get(alice, submitted.body.id)).body).toMatchObject({ state: "expired", error: { code: "operation_approval_expired" } });
    const request = await api.json(await api.call("GET", `/api/operator/v1/requests/${submitted.body.approval_id}`, operator));
    expect(request.body.status).toBe("expired");
  });

  it("an admission refusal is audited and creates nothing", async () => {
    const { api, server } = await serve({ ...roomyAdmission, clients: { alice: { client_active: 0 } } });
    const refused = await api.post(alice, chatOp(`refused-${provider}`));
    expect(refused.status).toBe(429);
    const { prisma } = server.operations.database;
    expect(await prisma.operation.count({ where: { idempotencyKey: `refused-${provider}` } })).toBe(0);
    const audit = await prisma.auditRecord.findFirst({ where: { action: "operation.refused" }, orderBy: { id: "desc" } });
    expect(audit).toMatchObject({ actor: "alice", category: "rate_limited", detail: { reason: "CLIENT_OPERATION_LIMIT" } });
  });

  it("a terminal operation is replayable for 30 days; after that its key names a new operation", async () => {
    const { api, server } = await serve();
    const key = `replay-window-${provider}`;
    const first = await api.post(alice, chatOp(key));
    await api.waitTerminal(alice, first.body.id);
    const { prisma } = server.operations.database;
    await prisma.operation.update({ where: { id: first.body.id }, data: { terminalAt: new Date(Date.now() - 29 * 86_400_000) } });
    expect((await api.post(alice, chatOp(key))).body.id).toBe(first.body.id);
    await prisma.operation.update({ where: { id: first.body.id }, data: { terminalAt: new Date(Date.now() - 31 * 86_400_000) } });
    const renewed = await api.post(alice, chatOp(key, "another reason, a month later"));
    expect(renewed.status).toBe(202);
    expect(renewed.body.id).not.toBe(first.body.id);
    expect((await api.get(alice, first.body.id)).status).toBe(200);
  });

  it("grants API: a window grant asked ahead, approved by an operator, then used by a matching operation", async () => {
    const policy = {
      rules: [
        { id: "w", effect: "request", operations: ["http.request"], grant_policy: { mode: "window", default_minutes: 10, max_minutes: 30, default_max_uses: 3, max_uses: 5 } },
        { id: "c", effect: "allow", operations: ["agent.chat"] },
      ],
    };
    const { api, server } = await serve(roomyAdmission, policy);
    const ask = {
      client_request_id: `grant-${provider}`,
      operation: "http.request",
      target: { credential: "upstream", path: "/g" },
      reason: "read /g for a while",
      minutes: 20,
      max_uses: 2,
    };
    const created = await api.json(await api.call("POST", "/api/grants", alice, ask));
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ status: "pending", mode: "window", minutes: 20, max_uses: 2, client_request_id: ask.client_request_id });
    const replay = await api.json(await api.call("POST", "/api/grants", alice, ask));
    expect(replay).toMatchObject({ status: 200, body: { id: created.body.id } });
    const conflict = await api.json(await api.call("POST", "/api/grants", alice, { ...ask, reason: "something else" }));
    expect(conflict.status).toBe(409);
    expect((await api.json(await api.call("POST", "/api/grants", alice, { ...ask, client_request_id: "too-long", minutes: 999 }))).status).toBe(400);
    expect((await api.json(await api.call("POST", "/api/grants", alice, { ...ask, client_request_id: "chat", operation: "agent.chat" }))).body.details[0].reason).toBe("GRANT_NOT_REQUIRED");

    const listed = await api.json(await api.call("GET", "/api/grants", alice));
    expect(listed.body.grants.map((grant: Json) => grant.id)).toContain(created.body.id);
    expect((await api.call("GET", `/api/grants/${created.body.id}`, bob)).status).toBe(404);

    await api.json(await api.call("POST", `/api/operator/v1/requests/${created.body.id}/approve`, operator, { expected_revision: created.body.revision }));
    const active = await api.json(await api.call("GET", `/api/grants/${created.body.id}`, alice));
    expect(active.body).toMatchObject({ status: "active", uses_remaining: 2 });
    expect(active.body.used_count ?? 0).toBe(0); // canonical protobuf JSON omits zero counters
    const used = await api.post(alice, httpOp(`grant-use-${provider}`, "/g"));
    expect(used.body).toMatchObject({ state: "approved", approval_id: created.body.id });
    // The same grants over gRPC.
    const grpc = createClient(AgentOperationsService, createGrpcTransport({ baseUrl: server.url, interceptors: [bearer(alice)] }));
    expect((await grpc.getGrant({ id: created.body.id })).grant).toMatchObject({ status: "active", usedCount: 1, clientRequestId: ask.client_request_id });
    expect((await grpc.listGrants({})).grants.map((grant) => grant.id)).toContain(created.body.id);
    const viaGrpc = await grpc.createGrant({ clientRequestId: `grpc-grant-${provider}`, operation: "http.request", target: { credential: "upstream", path: "/h" }, reason: "over gRPC" });
    expect(viaGrpc.grant?.status).toBe("pending");
  });

  it("restart keeps every operation with its state and revision", async () => {
    const first = await serve();
    const submitted = await first.api.post(alice, chatOp(`restart-${provider}`));
    const done = await first.api.waitTerminal(alice, submitted.body.id);
    await first.server.close();
    cleanups.length = 0;
    const second = await serve(roomyAdmission, undefined, { AXON_CLIENTS_FILE: first.env.AXON_CLIENTS_FILE, AXON_OPERATORS_FILE: first.env.AXON_OPERATORS_FILE, ...(database ? {} : { AXON_DATA_DIR: first.server.dataDir }) });
    const again = await second.api.get(alice, submitted.body.id);
    expect(again.body).toEqual(done);
  });

  it("gRPC: submit, approve and watch to terminal, with errors as google.rpc.Status", async () => {
    const { server } = await serve();
    const agent = createClient(AgentOperationsService, createGrpcTransport({ baseUrl: server.url, interceptors: [bearer(alice)] }));
    const operators = createClient(OperatorService, createGrpcTransport({ baseUrl: server.url, interceptors: [bearer(operator)] }));
    const { operation } = await agent.submitOperation({
      idempotencyKey: `grpc-${provider}`,
      operation: "http.request",
      target: { credential: "upstream", path: "/grpc" },
      arguments: { method: "GET" },
      reason: "over gRPC",
    });
    expect(operation?.state).toBe("pending");
    const states: string[] = [];
    const watching = (async () => {
      for await (const update of agent.watchOperation({ id: operation!.id, afterRevision: 0 })) states.push(update.operation!.state);
    })();
    const { request } = await operators.getRequest({ id: operation!.approvalId });
    await operators.approveRequest({ id: request!.id, expectedRevision: request!.revision });
    await watching;
    expect(states[0]).toBe("pending");
    expect(states.slice(-2)).toEqual(["executing", "succeeded"]);

    const events = [];
    const feed = new AbortController();
    // Resume from just before this operation's first event (this describe's servers share a database).
    const first = await server.operations.database.prisma.event.findFirst({ where: { operationId: operation!.id }, orderBy: { seq: "asc" } });
    for await (const update of operators.watchEvents({ afterSeq: BigInt(first!.seq - 1) }, { signal: feed.signal })) {
      if (update.event!.operationId !== operation!.id) continue;
      events.push(update.event!.kind);
      if (update.event!.kind === "request.approved") break;
    }
    expect(events).toEqual(expect.arrayContaining(["request.created", "request.approved"]));

    const unauthenticated = createClient(AgentOperationsService, createGrpcTransport({ baseUrl: server.url }));
    const error = await unauthenticated.getOperation({ id: operation!.id }).catch((e: unknown) => ConnectError.from(e));
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.Unauthenticated);
    expect((error as ConnectError).findDetails(ErrorInfoSchema)[0]?.metadata.category).toBe("authentication");
  });

  it("the operator feed is Server-Sent Events that resume after Last-Event-ID", async () => {
    const { server, api } = await serve();
    const abort = new AbortController();
    cleanups.push(() => abort.abort());
    const response = await fetch(`${server.url}/api/operator/v1/events`, { headers: { authorization: `Bearer ${operator}` }, signal: abort.signal });
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    const submitted = await api.post(alice, httpOp(`sse-${provider}`));
    let text = "";
    // A fresh watch may first replay other open requests' events: wait for this one's.
    const created = () => [...text.matchAll(/id: (\d+)\nevent: request.created\ndata: (.*)\n/g)].find((match) => match[2]!.includes(submitted.body.id));
    while (!created()) text += (await reader.read()).value ?? "";
    const id = created()!;
    expect(JSON.parse(id[2]!)).toMatchObject({ kind: "request.created", operation_id: submitted.body.id, request_id: submitted.body.approval_id });
    abort.abort();

    await api.approve(submitted.body.id);
    const resumed = new AbortController();
    cleanups.push(() => resumed.abort());
    const again = await fetch(`${server.url}/api/operator/v1/events`, {
      headers: { authorization: `Bearer ${operator}`, "last-event-id": id[1]! },
      signal: resumed.signal,
    });
    const reader2 = again.body!.pipeThrough(new TextDecoderStream()).getReader();
    let more = "";
    while (!more.includes("event: request.approved")) more += (await reader2.read()).value ?? "";
    expect(more).not.toContain("event: request.created");
  });
});

describe("a process killed during an execution", () => {
  let processes: AxonProcess[] = [];
  afterEach(async () => {
    for (const axon of processes) await axon.stop(1000);
    processes = [];
  });

  it("is reconciled after restart, and the provider is not called twice", async () => {
    // Both processes share one data directory: the same SQLite database.
    // A short lease: the killed process's claim lapses quickly, and only then may the new one reconcile.
    const env = { ...llm.env, ...writeFiles(upstream.url, roomyAdmission), AXON_DATA_DIR: mkdtempSync(path.join(os.tmpdir(), "axon-killed-")), AXON_REPLICA_LEASE_SECONDS: "1" };
    const first = await startAxonProcess(env);
    processes.push(first);
    const api = operationsApi(first.url);
    const submitted = await api.post(alice, httpOp("killed", "/hang"));
    await api.approve(submitted.body.id);
    while (!upstream.received.some((request) => request.url === "/hang")) await new Promise((resolve) => setTimeout(resolve, 20));
    first.child.kill("SIGKILL");
    await new Promise((resolve) => first.child.once("exit", resolve));

    const second = await startAxonProcess(env);
    processes.push(second);
    const done = await operationsApi(second.url).waitTerminal(alice, submitted.body.id);
    expect(done).toMatchObject({ state: "failed", error: { code: "upstream_result_unknown" } });
    expect(upstream.received.filter((request) => request.url === "/hang")).toHaveLength(1);
  });
});
