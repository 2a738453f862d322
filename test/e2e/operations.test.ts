import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  alice,
  bob,
  chatOp,
  httpOp,
  operationsApi,
  operator,
  roomyAdmission,
  secret,
  startUpstream,
  upstreamToken,
  writeFiles,
} from "../support/operations.js";
import { ScriptedLlm } from "../support/scripted-llm/scripted-llm.js";
import { createPostgresDatabase, type TestDatabase } from "../support/postgres-database.js";
import { startTestServer, type TestServer } from "../support/server.js";

type Json = Record<string, any>;

describe.each(["sqlite", "postgresql"] as const)("Agent Operations V1 conformance on %s", (provider) => {
  let llm: ScriptedLlm;
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let database: TestDatabase | undefined;
  let server: TestServer;
  let env: Record<string, string>;
  const logLines: string[] = [];

  let api: ReturnType<typeof operationsApi>;
  const call: ReturnType<typeof operationsApi>["call"] = (...args) => api.call(...args);
  const json: ReturnType<typeof operationsApi>["json"] = (response) => api.json(response);
  const post: ReturnType<typeof operationsApi>["post"] = (token, body) => api.post(token, body);
  const waitTerminal: ReturnType<typeof operationsApi>["waitTerminal"] = (token, id) => api.waitTerminal(token, id);

  beforeAll(async () => {
    llm = await ScriptedLlm.start("openai");
    upstream = await startUpstream();
    database = provider === "postgresql" ? await createPostgresDatabase() : undefined;
    env = {
      ...llm.env,
      ...writeFiles(upstream.url, roomyAdmission),
      ...(database ? { DATABASE_URL: database.url } : {}),
    };
    server = await startTestServer({ env, logLines });
    api = operationsApi(server.url);
  });
  afterAll(async () => {
    await server.close();
    await database?.drop();
    upstream.close();
    await llm.close();
  });

  it("discovery names the contract and the operations this client may use", async () => {
    const { status, body } = await json(await call("GET", "/.well-known/unyolo-agent", alice));
    expect(status).toBe(200);
    expect(body).toEqual({
      api_version: "unyolo.io/agent/v1",
      contract_digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
      build_id: expect.any(String),
      operations: ["agent.chat", "http.request"],
    });
  });

  it("a missing or wrong token is 401 with WWW-Authenticate, and each surface takes only its own secrets", async () => {
    for (const [route, token] of [
      ["/api/agent/v1/operations", undefined],
      ["/api/agent/v1/operations", secret()],
      ["/api/agent/v1/operations", operator],
      ["/api/operator/v1/requests", alice],
      ["/.well-known/unyolo-agent", undefined],
    ] as const) {
      const response = await call("GET", route, token);
      expect(response.status, `${route} ${token === undefined ? "no token" : "token"}`).toBe(401);
      expect(response.headers.get("www-authenticate")).toBe("Bearer");
      const { body } = await json(response);
      expect(body.code).toBe(16);
      expect(body.details[0]).toMatchObject({ reason: "UNAUTHENTICATED", metadata: { category: "authentication" } });
    }
    expect((await call("GET", "/healthz", undefined)).status).toBe(200);
  });

  it("allow: agent.chat is accepted with 202, Location and Retry-After, and succeeds", async () => {
    const { status, headers, body } = await post(alice, chatOp("chat-1"));
    expect(status).toBe(202);
    expect(headers.get("location")).toBe(`/api/agent/v1/operations/${body.id}`);
    expect(headers.get("retry-after")).toBe("2");
    expect(body).toMatchObject({ api_version: "unyolo.io/agent/v1", client_id: "alice", state: "approved", revision: 1 });
    expect(body.id).toMatch(/^op_[A-Za-z0-9_-]{24}$/);
    const done = await waitTerminal(alice, body.id);
    expect(done).toMatchObject({ state: "succeeded", result: { text: expect.stringContaining("Answer") } });
    expect(done.terminal_at).toBeDefined();
  });

  it("a replay returns the same operation in its current state; a changed reason is a conflict that creates nothing", async () => {
    const first = await post(alice, chatOp("chat-replay"));
    const done = await waitTerminal(alice, first.body.id);
    const replay = await post(alice, chatOp("chat-replay"));
    expect(replay.status).toBe(200);
    expect(replay.body).toMatchObject({ id: first.body.id, revision: done.revision, state: "succeeded" });
    const conflict = await post(alice, chatOp("chat-replay", "another reason"));
    expect(conflict.status).toBe(409);
    expect(conflict.body.details[0]).toMatchObject({ reason: "IDEMPOTENCY_CONFLICT", metadata: { category: "conflict" } });
    const listed = await json(await call("GET", "/api/agent/v1/operations?idempotency_key=chat-replay", alice));
    expect(listed.body.operations).toHaveLength(1);
  });

  it("50 concurrent duplicates create exactly one operation", async () => {
    const answers = await Promise.all(Array.from({ length: 50 }, () => post(alice, chatOp("chat-dupes"))));
    expect(new Set(answers.map((answer) => answer.body.id)).size).toBe(1);
    expect(answers.filter((answer) => answer.status === 202)).toHaveLength(1);
    const listed = await json(await call("GET", "/api/agent/v1/operations?idempotency_key=chat-dupes", alice));
    expect(listed.body.operations).toHaveLength(1);
  });

  it("lists own operations newest first, by key and state, with opaque cursors", async () => {
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push((await post(bob, chatOp(`page-${i}`))).body.id);
    const seen: string[] = [];
    let cursor = "";
    do {
      const { status, body } = await json(await call("GET", `/api/agent/v1/operations?limit=2${cursor ? `&cursor=${cursor}` : ""}`, bob));
      expect(status).toBe(200);
      expect(body.operations.length).toBeLessThanOrEqual(2);
      for (const operation of body.operations) {
        expect(operation.target).toBeUndefined();
        expect(operation.arguments).toBeUndefined();
        seen.push(operation.id);
      }
      cursor = body.next_cursor ?? "";
    } while (cursor);
    expect(seen).toEqual([...ids].reverse());
    expect((await call("GET", "/api/agent/v1/operations?cursor=not-a-cursor", bob)).status).toBe(400);
    expect((await call("GET", "/api/agent/v1/operations?limit=51", bob)).status).toBe(400);
    const denied = await json(await call("GET", "/api/agent/v1/operations?state=denied", bob));
    expect(denied.body.operations ?? []).toEqual([]);
  });

  it("another client's operation is 404 on every route", async () => {
    const { body } = await post(alice, chatOp("private-1"));
    for (const [method, route] of [
      ["GET", `/api/agent/v1/operations/${body.id}`],
      ["GET", `/api/agent/v1/operations/${body.id}/events?wait_seconds=0`],
      ["POST", `/api/agent/v1/operations/${body.id}/cancel`],
    ] as const) {
      const response = await json(await call(method, route, bob, method === "POST" ? {} : undefined));
      expect(response.status).toBe(404);
      expect(response.body.details[0].reason).toBe("OPERATION_NOT_FOUND");
    }
  });

  it("wait_seconds 31 is INVALID_ARGUMENT naming the field", async () => {
    const { body } = await post(alice, chatOp("wait-31"));
    const response = await json(await call("GET", `/api/agent/v1/operations/${body.id}/events?wait_seconds=31`, alice));
    expect(response.status).toBe(400);
    expect(response.body.details).toContainEqual(expect.objectContaining({ fieldViolations: [expect.objectContaining({ field: "wait_seconds" })] }));
  });

  it("request: http.request waits for an operator; approve runs it; the secret reaches only the upstream", async () => {
    const submitted = await post(alice, httpOp("http-approve"));
    expect(submitted.status).toBe(202);
    expect(submitted.body).toMatchObject({ state: "pending", approval_id: expect.stringMatching(/^req_/) });
    const request = await json(await call("GET", `/api/operator/v1/requests/${submitted.body.approval_id}`, operator));
    expect(request.body).toMatchObject({ status: "pending", client_id: "alice", mode: "execution", linked_operation: { id: submitted.body.id } });
    const pending = await json(await call("GET", "/api/operator/v1/requests", operator));
    expect(pending.body.requests.map((r: Json) => r.id)).toContain(submitted.body.approval_id);

    const stale = await call("POST", `/api/operator/v1/requests/${request.body.id}/approve`, operator, { expected_revision: 99 });
    expect(stale.status).toBe(409);
    const approved = await json(await call("POST", `/api/operator/v1/requests/${request.body.id}/approve`, operator, { expected_revision: request.body.revision }));
    expect(approved.status).toBe(200);
    const again = await json(await call("POST", `/api/operator/v1/requests/${request.body.id}/approve`, operator, { expected_revision: approved.body.revision }));
    expect(again.status).toBe(409);
    expect(again.body.details[0].reason).toBe("REQUEST_NOT_PENDING");

    const done = await waitTerminal(alice, submitted.body.id);
    expect(done).toMatchObject({ state: "succeeded", result: { status: 200, body: { ok: true, path: "/things" } } });
    expect(upstream.received.find((r) => r.url === "/things")?.authorization).toBe(`Bearer ${upstreamToken}`);
  });

  it("deny: the operation is denied and no upstream request is made", async () => {
    const before = upstream.received.length;
    const submitted = await post(alice, httpOp("http-deny", "/denied"));
    const request = await json(await call("GET", `/api/operator/v1/requests/${submitted.body.approval_id}`, operator));
    const denied = await json(await call("POST", `/api/operator/v1/requests/${request.body.id}/deny`, operator, { expected_revision: request.body.revision, reason: "no" }));
    expect(denied.body.status).toBe("denied");
    const done = await waitTerminal(alice, submitted.body.id);
    expect(done).toMatchObject({ state: "denied", error: { code: "operation_approval_denied" } });
    expect(upstream.received.length).toBe(before);
  });

  it("cancel: pending -> canceled with its approval; terminal -> unchanged; executing -> conflict", async () => {
    const pending = await post(alice, httpOp("cancel-pending"));
    const canceled = await json(await call("POST", `/api/agent/v1/operations/${pending.body.id}/cancel`, alice, {}));
    expect(canceled.body).toMatchObject({ state: "canceled", revision: 2 });
    const approval = await json(await call("GET", `/api/operator/v1/requests/${pending.body.approval_id}`, operator));
    expect(approval.body.status).toBe("canceled");
    const unchanged = await json(await call("POST", `/api/agent/v1/operations/${pending.body.id}/cancel`, alice, {}));
    expect(unchanged).toMatchObject({ status: 200, body: { state: "canceled", revision: 2 } });

    llm.hold();
    const running = await post(alice, chatOp("cancel-executing"));
    await llm.whenReceived(llm.requests.length + 1);
    const refused = await json(await call("POST", `/api/agent/v1/operations/${running.body.id}/cancel`, alice, {}));
    expect(refused.status).toBe(409);
    expect(refused.body.details[0].reason).toBe("OPERATION_NOT_CANCELABLE");
    llm.reset();
  });

  it("a hostile upstream error body is sanitized, and the upstream secret is nowhere but the upstream", async () => {
    const submitted = await post(alice, httpOp("http-hostile", "/fail"));
    const request = await json(await call("GET", `/api/operator/v1/requests/${submitted.body.approval_id}`, operator));
    await call("POST", `/api/operator/v1/requests/${request.body.id}/approve`, operator, { expected_revision: request.body.revision });
    const done = await waitTerminal(alice, submitted.body.id);
    expect(done.result.status).toBe(500);
    const text = JSON.stringify(done);
    expect(text).not.toContain(upstreamToken);
    expect(text).not.toContain("abc.def.ghi");
    expect(text).not.toMatch(/\u0007/);

    const prisma = server.operations.database.prisma;
    const rows = JSON.stringify(
      await Promise.all([prisma.operation.findMany(), prisma.grant.findMany(), prisma.event.findMany(), prisma.auditRecord.findMany()]),
    );
    expect(rows).toContain(submitted.body.id);
    expect(rows).not.toContain(upstreamToken);
    expect(logLines.join("\n")).not.toContain(upstreamToken);
    expect(logLines.join("\n")).not.toContain(alice);
  });
});
