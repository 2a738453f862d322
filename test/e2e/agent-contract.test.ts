import { gzipSync } from "node:zlib";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentOperationsService } from "../../src/gen/axon/agent/v1/agent_pb.js";
import { OperatorService } from "../../src/gen/axon/operator/v1/operator_pb.js";
import { BadRequestSchema, ErrorInfoSchema } from "../../src/gen/google/rpc/error_details_pb.js";
import { fixtureEnv } from "./expectations.js";
import { envelope, envelopesOf } from "../support/envelopes.js";
import { alice, bearer, bob, carol, httpOp, operationsApi, operator, roomyAdmission, startUpstream, writeFiles } from "../support/operations.js";
import { createPostgresDatabase, queryPostgres, type TestDatabase } from "../support/postgres-database.js";
import { ScriptedChats } from "../support/scripted-chat.js";
import { startTestServer, type TestServer } from "../support/server.js";

type Json = Record<string, any>;

/** The policy of these tests: `/secret` is denied outright, `/window/...` asks for window grants, the rest one use each. */
const policy = {
  rules: [
    { id: "no-secrets", effect: "deny", operations: ["http.request"], targets: [{ path: "/secret" }] },
    {
      id: "windows",
      effect: "request",
      operations: ["http.request"],
      targets: [{ path: "/window/*" }],
      grant_policy: { mode: "window", default_minutes: 60, max_minutes: 120, default_max_uses: 10, max_uses: 20 },
    },
    { id: "http", effect: "request", operations: ["http.request"] },
  ],
};

/** Carol may have one approval pending at a time: her second asks are refused. */
const admission = { ...roomyAdmission, clients: { carol: { client_pending: 1 } } };

/** ErrorInfo and BadRequest of a REST google.rpc.Status body. */
function detailsOf(body: Json): { info: Json; violations: Json[] } {
  const details = (body.details ?? []) as Json[];
  const info = details.find((detail) => String(detail["@type"]).endsWith("google.rpc.ErrorInfo")) ?? {};
  const badRequest = details.find((detail) => String(detail["@type"]).endsWith("google.rpc.BadRequest"));
  return { info, violations: badRequest?.fieldViolations ?? [] };
}

/** ErrorInfo and BadRequest of a Connect error body (connect-es puts each detail's JSON in `debug`). */
function connectDetailsOf(body: Json): { info: Json; violations: Json[] } {
  const details = (body.details ?? []) as Json[];
  const info = details.find((detail) => detail.type === "google.rpc.ErrorInfo")?.debug ?? {};
  const badRequest = details.find((detail) => detail.type === "google.rpc.BadRequest")?.debug;
  return { info, violations: badRequest?.fieldViolations ?? [] };
}

/** The field violations of either form. */
const violationsOf = (body: Json): Json[] => [...detailsOf(body).violations, ...connectDetailsOf(body).violations];

describe.each(["sqlite", "postgresql"] as const)("Agent V1 and Operator V1 to the letter on %s", (provider) => {
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let database: TestDatabase | undefined;
  let server: TestServer;
  let api: ReturnType<typeof operationsApi>;
  let keys = 0;
  const key = (label: string) => `${label}-${provider}-${++keys}`;

  beforeAll(async () => {
    upstream = await startUpstream();
    database = provider === "postgresql" ? await createPostgresDatabase() : undefined;
    const env = { ...fixtureEnv, ...writeFiles(upstream.url, admission, policy), ...(database ? { DATABASE_URL: database.url } : {}) };
    server = await startTestServer({ env, chats: new ScriptedChats() });
    api = operationsApi(server.url);
  });
  afterAll(async () => {
    await server?.close();
    await database?.drop();
    upstream?.close();
  });

  const rawPost = async (route: string, token: string, body: string, contentType = "application/json") => {
    const response = await fetch(server.url + route, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": contentType }, body });
    return { status: response.status, headers: response.headers, body: (await response.json()) as Json };
  };
  const connect = (service: "agent" | "operator", method: string, token: string, body: string) =>
    rawPost(`/axon.${service}.v1.${service === "agent" ? "AgentOperationsService" : "OperatorService"}/${method}`, token, body);
  const get = async (route: string, token: string) => api.json(await api.call("GET", route, token));
  const operationCount = async () => {
    const { body } = await get("/api/agent/v1/operations?limit=50", alice);
    return body.operations.length as number;
  };
  /** A pending http.request of alice's, with its request as the operator sees it. */
  const pendingRequest = async (owner = alice) => {
    const submitted = await api.post(owner, httpOp(key("pending")));
    const request = await get(`/api/operator/v1/requests/${submitted.body.approval_id}`, operator);
    return { operation: submitted.body, request: request.body };
  };

  describe("strict JSON bodies", () => {
    const submit = JSON.stringify(httpOp("strict-body"));
    const refusals: [string, string, string][] = [
      ["an unknown field", submit.replace(/}$/, ',"priority":1}'), "priority"],
      ["an unknown field in a nested message", '{"expected_revision":1,"constraints":{"duration_seconds":60,"colour":"red"}}', "constraints.colour"],
      ["a duplicate key", submit.replace(/}$/, ',"reason":"again"}'), "reason"],
      ["a duplicate key deep in the arguments", submit.replace('"arguments":{"method":"GET"}', '"arguments":{"method":"GET","query":{"a":"1","a":"2"}}'), "arguments.query.a"],
      ["trailing data", `${submit} {}`, "body"],
      ["an array body", "[1,2]", "body"],
      ["a string body", '"text"', "body"],
      ["null", "null", "body"],
    ];

    it.each(refusals)("%s is 400 invalid_request naming the field, on REST and Connect JSON", async (_label, body, field) => {
      const before = await operationCount();
      const isDecision = body.includes("expected_revision");
      const { request } = isDecision ? await pendingRequest() : { request: undefined };
      const rest = isDecision
        ? await rawPost(`/api/operator/v1/requests/${request!.id}/approve`, operator, body)
        : await rawPost("/api/agent/v1/operations", alice, body);
      expect(rest.status, JSON.stringify(rest.body)).toBe(400);
      const restDetails = detailsOf(rest.body);
      expect(restDetails.info.metadata).toMatchObject({ category: "rejected", code: "invalid_request" });
      expect(restDetails.violations.map((violation) => violation.field)).toContain(field);

      const connectBody = isDecision ? body.replace("{", `{"id":"${request!.id}",`) : body;
      const viaConnect = isDecision ? await connect("operator", "ApproveRequest", operator, connectBody) : await connect("agent", "SubmitOperation", alice, connectBody);
      expect(viaConnect.status, JSON.stringify(viaConnect.body)).toBe(400);
      const connectDetails = connectDetailsOf(viaConnect.body);
      expect(connectDetails.info.metadata).toMatchObject({ code: "invalid_request" });
      expect(connectDetails.violations.map((violation) => violation.field)).toContain(field);
      expect(await operationCount()).toBe(before + (isDecision ? 1 : 0));
      if (isDecision) expect((await get(`/api/operator/v1/requests/${request!.id}`, operator)).body.status).toBe("pending");
    });

    it("a Connect stream's request with an unknown field ends with invalid_argument, and the stream is no-store", async () => {
      const response = await fetch(`${server.url}/axon.agent.v1.AgentOperationsService/WatchOperation`, {
        method: "POST",
        headers: { authorization: `Bearer ${alice}`, "content-type": "application/connect+json", "connect-protocol-version": "1" },
        body: envelope(0, '{"id":"op_nothing","after_revision":0,"colour":"red"}'),
      });
      expect(response.headers.get("cache-control")).toBe("no-store");
      const bytes = Buffer.from(await response.arrayBuffer());
      // The last envelope (flag 2) is the end of the stream, with its error.
      const end = JSON.parse(bytes.subarray(5).toString("utf8")) as Json;
      expect(bytes[0]).toBe(2);
      expect(end.error).toMatchObject({ code: "invalid_argument" });
      expect(end.error.message).toContain("colour");
    });

    /** The envelopes of a stream's answer: each message's flags and JSON. */
    const messagesOf = (body: Buffer) =>
      envelopesOf(body).map(({ flags, payload }) => ({ flags, json: (flags & 0x80 ? payload.toString("utf8") : JSON.parse(payload.toString("utf8"))) as Json }));
    const watchOperation = async (contentType: string, body: Buffer, headers: Record<string, string> = {}) => {
      const response = await fetch(`${server.url}/axon.agent.v1.AgentOperationsService/WatchOperation`, {
        method: "POST",
        headers: { authorization: `Bearer ${alice}`, "content-type": contentType, "connect-protocol-version": "1", ...headers },
        body,
      });
      return { response, envelopes: messagesOf(Buffer.from(await response.arrayBuffer())) };
    };

    it("a Connect stream's request with a key given twice ends with invalid_argument naming it and unYOLO's code word", async () => {
      const { response, envelopes } = await watchOperation("application/connect+json", envelope(0, Buffer.from('{"id":"op_nothing","id":"op_other"}')));
      expect(response.headers.get("cache-control")).toBe("no-store");
      const end = envelopes.at(-1)!;
      expect(end.flags).toBe(2);
      expect(end.json.error).toMatchObject({ code: "invalid_argument" });
      expect(connectDetailsOf(end.json.error).info.metadata).toMatchObject({ code: "invalid_request" });
      expect(connectDetailsOf(end.json.error).violations.map((violation) => violation.field)).toEqual(["id"]);
    });

    it("a gzipped Connect stream message is read as strictly", async () => {
      const gzipped = gzipSync('{"id":"op_nothing","id":"op_other"}');
      const { envelopes } = await watchOperation("application/connect+json", envelope(1, gzipped), { "connect-content-encoding": "gzip" });
      const end = envelopes.at(-1)!;
      expect(end.json.error).toMatchObject({ code: "invalid_argument" });
      expect(connectDetailsOf(end.json.error).violations.map((violation) => violation.field)).toEqual(["id"]);
    });

    /** The trailers a gRPC-Web answer ends with (its last envelope, flag 0x80), by name. */
    const trailersOf = (envelopes: { flags: number; json: Json }[]) => {
      const last = envelopes.at(-1)!;
      expect(last.flags).toBe(0x80);
      const lines = String(last.json).trim().split("\r\n");
      return Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(":")), line.slice(line.indexOf(":") + 1).trim()]));
    };

    it("gRPC-Web JSON refuses a key given twice, and a message declared over 2 MiB before it arrives", async () => {
      const duplicate = trailersOf((await watchOperation("application/grpc-web+json", envelope(0, Buffer.from('{"id":"op_nothing","after_revision":0,"after_revision":1}')))).envelopes);
      expect(duplicate["grpc-status"]).toBe("3");
      expect(decodeURIComponent(duplicate["grpc-message"]!)).toBe("a key appears twice in one JSON object");
      const details = Buffer.from(duplicate["grpc-status-details-bin"]!, "base64").toString("latin1");
      expect(details).toContain("after_revision");
      expect(details).toContain("invalid_request");

      const oversized = trailersOf((await watchOperation("application/grpc-web+json", envelope(0, Buffer.from("{}"), 2 * 1024 * 1024 + 1))).envelopes);
      expect(oversized["grpc-status"]).toBe("3");
      expect(decodeURIComponent(oversized["grpc-message"]!)).toContain("2 MiB");
    });

    it("the neuro-san API keeps reading leniently: unknown fields and duplicates are accepted there", async () => {
      const response = await fetch(`${server.url}/api/v1/greeter/streaming_chat`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: '{"user_message":{"text":"hi"},"colour":"red","colour":"blue"}',
      });
      expect(response.status).toBe(200);
      expect(response.headers.get("cache-control")).not.toBe("no-store");
      await response.text();
    });
  });

  describe("sizes in UTF-8 bytes", () => {
    it("a submit body of 2 MiB + 1 byte is 400, whatever the server-wide limit; 2 MiB of arguments in bytes is never reached", async () => {
      const padding = (bytes: number) => {
        const base = JSON.stringify({ ...httpOp(key("big")), arguments: { method: "GET", body: "" } });
        return base.replace('"body":""', `"body":"${"x".repeat(bytes - base.length)}"`);
      };
      const over = padding(2 * 1024 * 1024 + 1);
      expect(Buffer.byteLength(over)).toBe(2 * 1024 * 1024 + 1);
      for (const answer of [await rawPost("/api/agent/v1/operations", alice, over), await connect("agent", "SubmitOperation", alice, over)]) {
        expect(answer.status).toBe(400);
        expect(JSON.stringify(answer.body)).toContain("invalid_request");
      }
    });

    it("target and arguments are measured in UTF-8 bytes, reason in characters after trimming", async () => {
      const twoByte = "é";
      // 600,000 characters are 1,200,000 bytes: over 1 MiB although fewer UTF-16 units.
      const bigArguments = await api.post(alice, { ...httpOp(key("args")), arguments: { method: "POST", body: twoByte.repeat(600_000) } });
      expect(bigArguments.status).toBe(400);
      expect(detailsOf(bigArguments.body).violations).toContainEqual(expect.objectContaining({ field: "arguments" }));

      const bigTarget = await api.post(alice, { ...httpOp(key("target")), target: { credential: "upstream", path: `/${twoByte.repeat(8300)}` } });
      expect(bigTarget.status).toBe(400);
      expect(detailsOf(bigTarget.body).violations).toContainEqual(expect.objectContaining({ field: "target" }));

      // 2000 characters outside the BMP are 4000 UTF-16 units, and still a valid reason.
      const emoji = "🙂";
      expect((await api.post(alice, { ...httpOp(key("reason")), reason: `  ${emoji.repeat(2000)}  ` })).status).toBe(202);
      const tooLong = await api.post(alice, { ...httpOp(key("reason")), reason: emoji.repeat(2001) });
      expect(tooLong.status).toBe(400);
      expect(detailsOf(tooLong.body).violations).toContainEqual(expect.objectContaining({ field: "reason" }));
      expect((await api.post(alice, { ...httpOp(key("reason")), reason: "   " })).status).toBe(400);
    });
  });

  describe("pages and counters", () => {
    it("an empty page carries its array, on REST and Connect JSON", async () => {
      expect(await get("/api/agent/v1/operations", bob)).toMatchObject({ status: 200, body: { operations: [] } });
      expect((await get("/api/agent/v1/operations", bob)).body).not.toHaveProperty("next_cursor");
      expect(await get("/api/operator/v1/requests?requester=nobody", operator)).toMatchObject({ status: 200, body: { requests: [] } });
      expect(await get("/api/grants", bob)).toMatchObject({ status: 200, body: { grants: [] } });
      expect((await connect("agent", "ListOperations", bob, "{}")).body).toEqual({ operations: [] });
      expect((await connect("operator", "ListRequests", operator, '{"requester":"nobody"}')).body).toEqual({ requests: [] });
    });

    it("used_count and uses_remaining are present at 0", async () => {
      const { operation, request } = await pendingRequest();
      expect(request).toMatchObject({ used_count: 0, uses_remaining: 1 });
      const approved = await api.approve(operation.id);
      expect(approved.body).toMatchObject({ status: "consumed", used_count: 1, uses_remaining: 0 });
      const listed = await get("/api/operator/v1/requests?status=pending", operator);
      for (const pending of listed.body.requests) expect(pending).toHaveProperty("used_count", 0);
    });
  });

  describe("unYOLO's words", () => {
    const codeOf = (body: Json) => detailsOf(body).info.metadata?.code;

    it("every error carries its code word beside the reason", async () => {
      expect(codeOf((await get("/api/agent/v1/operations", "not-a-secret")).body)).toBe("authentication_failed");
      expect(codeOf((await get("/api/operator/v1/requests", alice)).body)).toBe("authentication_failed");
      expect(codeOf((await get("/api/agent/v1/operations/op_nothing", alice)).body)).toBe("not_found");
      expect(codeOf((await get("/api/operator/v1/requests/req_nothing", operator)).body)).toBe("not_found");
      expect(codeOf((await get("/api/agent/v1/operations?limit=51", alice)).body)).toBe("invalid_request");

      const original = httpOp(key("conflict"));
      await api.post(alice, original);
      const conflict = await api.post(alice, { ...original, reason: "another reason" });
      expect(conflict.status).toBe(409);
      expect(detailsOf(conflict.body).info).toMatchObject({ reason: "IDEMPOTENCY_CONFLICT", metadata: { category: "conflict", code: "idempotency_conflict" } });

      const { request } = await pendingRequest();
      const stale = await api.json(await api.call("POST", `/api/operator/v1/requests/${request.id}/deny`, operator, { expected_revision: request.revision + 1 }));
      expect(stale.status).toBe(409);
      expect(codeOf(stale.body)).toBe("revision_conflict");
      await api.call("POST", `/api/operator/v1/requests/${request.id}/deny`, operator, { expected_revision: request.revision });
      const decided = await api.json(await api.call("POST", `/api/operator/v1/requests/${request.id}/approve`, operator, { expected_revision: request.revision + 1 }));
      expect(decided.status).toBe(409);
      expect(codeOf(decided.body)).toBe("request_not_pending");

      await api.post(carol, httpOp(key("carol")));
      const refused = await api.post(carol, httpOp(key("carol")));
      expect(refused.status).toBe(429);
      expect(detailsOf(refused.body).info).toMatchObject({ reason: "CLIENT_PENDING_LIMIT", metadata: { category: "rate_limited", code: "client_pending_limit" } });
    });

    it("Connect errors carry the same code words", async () => {
      const missing = await connect("agent", "GetOperation", alice, '{"id":"op_nothing"}');
      expect(missing.status).toBe(404);
      expect(connectDetailsOf(missing.body).info.metadata).toMatchObject({ category: "rejected", code: "not_found" });
      const unauthenticated = await connect("operator", "ListRequests", "not-a-secret", "{}");
      expect(connectDetailsOf(unauthenticated.body).info.metadata).toMatchObject({ code: "authentication_failed" });
    });

    it("an operation's error.code says operation_policy_denied, operation_approval_denied and operation_canceled", async () => {
      const denied = await api.post(alice, httpOp(key("secret"), "/secret"));
      expect(denied.body).toMatchObject({ state: "denied", error: { code: "operation_policy_denied" } });

      const { operation, request } = await pendingRequest();
      await api.call("POST", `/api/operator/v1/requests/${request.id}/deny`, operator, { expected_revision: request.revision });
      expect((await api.get(alice, operation.id)).body).toMatchObject({ state: "denied", error: { code: "operation_approval_denied" } });

      const pending = await api.post(alice, httpOp(key("cancel")));
      const canceled = await api.json(await api.call("POST", `/api/agent/v1/operations/${pending.body.id}/cancel`, alice));
      expect(canceled.body).toMatchObject({ state: "canceled", error: { code: "operation_canceled" } });
    });

    it("a row stored with Axon's older words reads with unYOLO's", async () => {
      if (provider !== "postgresql") return; // the same mapping on read serves both databases; one of them shows it
      const pending = await api.post(alice, httpOp(key("legacy")));
      await api.call("POST", `/api/agent/v1/operations/${pending.body.id}/cancel`, alice);
      await queryPostgres(database!.url, `UPDATE "Operation" SET "errorCode" = 'canceled' WHERE "id" = '${pending.body.id}'`);
      expect((await api.get(alice, pending.body.id)).body.error.code).toBe("operation_canceled");
    });
  });

  describe("query strings", () => {
    it.each([
      ["a repeated parameter", "/api/agent/v1/operations?state=pending&state=denied", "state"],
      ["an empty value", "/api/agent/v1/operations?state=", "state"],
      ["an unknown parameter", "/api/agent/v1/operations?page_size=5", "page_size"],
      ["limit 0", "/api/agent/v1/operations?limit=0", "limit"],
      ["limit 51 for operations", "/api/agent/v1/operations?limit=51", "limit"],
      ["a malformed idempotency_key filter", "/api/agent/v1/operations?idempotency_key=-x", "idempotency_key"],
      ["an empty cursor", "/api/agent/v1/operations?cursor=", "cursor"],
      ["limit 0 for operator requests", "/api/operator/v1/requests?limit=0", "limit"],
      ["limit 101 for operator requests", "/api/operator/v1/requests?limit=101", "limit"],
      ["a repeated operator filter", "/api/operator/v1/requests?status=all&status=pending", "status"],
      ["an unknown grant status", "/api/grants?status=nope", "status"],
      ["limit 0 for grants", "/api/grants?limit=0", "limit"],
    ])("%s is 400 naming the parameter", async (_label, route, field) => {
      const token = route.startsWith("/api/operator") ? operator : alice;
      const { status, body } = await get(route, token);
      expect(status, JSON.stringify(body)).toBe(400);
      expect(detailsOf(body).violations).toContainEqual(expect.objectContaining({ field }));
      expect(detailsOf(body).info.metadata.code).toBe("invalid_request");
    });

    it("limits at their bounds are served", async () => {
      expect((await get("/api/agent/v1/operations?limit=1", alice)).status).toBe(200);
      expect((await get("/api/agent/v1/operations?limit=50", alice)).status).toBe(200);
      expect((await get("/api/operator/v1/requests?limit=100", operator)).status).toBe(200);
    });
  });

  describe("cursors", () => {
    it("a cursor is bound to the client that received it and to a row that exists", async () => {
      await api.post(alice, httpOp(key("page")));
      await api.post(alice, httpOp(key("page")));
      const first = await get("/api/agent/v1/operations?limit=1", alice);
      const cursor = first.body.next_cursor as string;
      expect(cursor).toEqual(expect.any(String));
      const next = await get(`/api/agent/v1/operations?limit=1&cursor=${cursor}`, alice);
      expect(next.status).toBe(200);
      expect(next.body.operations[0].id).not.toBe(first.body.operations[0].id);

      const stolen = await get(`/api/agent/v1/operations?limit=1&cursor=${cursor}`, bob);
      expect(stolen.status).toBe(404);
      expect(detailsOf(stolen.body).info.metadata.code).toBe("not_found");
      const forged = Buffer.from(JSON.stringify(["alice", "op_000000000000000000000000"])).toString("base64url");
      expect((await get(`/api/agent/v1/operations?cursor=${forged}`, alice)).status).toBe(404);
      for (const malformed of ["%25%25%25", "bm90IGpzb24", Buffer.from('["alice"]').toString("base64url")]) {
        const answer = await get(`/api/agent/v1/operations?cursor=${malformed}`, alice);
        expect(answer.status, malformed).toBe(400);
        expect(detailsOf(answer.body).violations).toContainEqual(expect.objectContaining({ field: "cursor" }));
      }
    });

    it("an operator's cursor pages requests and names a request that exists", async () => {
      await pendingRequest();
      await pendingRequest();
      const first = await get("/api/operator/v1/requests?limit=1", operator);
      const next = await get(`/api/operator/v1/requests?limit=1&cursor=${first.body.next_cursor}`, operator);
      expect(next.status).toBe(200);
      expect(next.body.requests[0].id).not.toBe(first.body.requests[0].id);
      const forged = Buffer.from(JSON.stringify(["ops", "req_000000000000000000000000"])).toString("base64url");
      expect((await get(`/api/operator/v1/requests?cursor=${forged}`, operator)).status).toBe(404);
      const otherOperator = Buffer.from(JSON.stringify(["someone", first.body.requests[0].id])).toString("base64url");
      expect((await get(`/api/operator/v1/requests?cursor=${otherOperator}`, operator)).status).toBe(404);
    });
  });

  describe("values no database stores", () => {
    const submitWith = (text: string) => rawPost("/api/agent/v1/operations", alice, text);
    it.each([
      ["a NUL in reason", { ...httpOp("nul-reason"), reason: "a\u0000b" }, "reason"],
      ["a NUL in arguments", { ...httpOp("nul-args"), arguments: { method: "GET", query: { q: "\u0000" } } }, "arguments.query.q"],
      ["a NUL in a sly_data key", { ...httpOp("nul-sly"), operation: "agent.chat", target: { network: "greeter" }, arguments: { text: "hi", sly_data: { "k\u0000": 1 } } }, "arguments.sly_data"],
    ])("%s is 400 naming the field, on REST and Connect JSON, and nothing is written", async (_label, body, field) => {
      const before = await operationCount();
      const text = JSON.stringify({ ...body, idempotency_key: key("nul") });
      for (const answer of [await submitWith(text), await connect("agent", "SubmitOperation", alice, text)]) {
        expect(answer.status, JSON.stringify(answer.body)).toBe(400);
        expect(violationsOf(answer.body).map((violation) => violation.field).join(" ")).toContain(field);
      }
      expect(await operationCount()).toBe(before);
    });

    it("a number beyond a double (1e400) in target or arguments is 400 naming the field", async () => {
      const before = await operationCount();
      const base = JSON.stringify({ ...httpOp(key("inf")), arguments: { method: "GET", query: { n: 0 } } });
      for (const text of [base.replace('"n":0', '"n":1e400'), base.replace('"path":"/things"', '"path":"/things","depth":-1e400')]) {
        for (const answer of [await submitWith(text), await connect("agent", "SubmitOperation", alice, text)]) {
          expect(answer.status, JSON.stringify(answer.body)).toBe(400);
          expect(JSON.stringify(answer.body)).toMatch(/arguments\.query\.n|target\.depth/);
        }
      }
      expect(await operationCount()).toBe(before);
    });

    it("a NUL in an operator's reason, a filter or an id is 400, and the request stays as it was", async () => {
      const { request } = await pendingRequest();
      const deny = await api.json(await api.call("POST", `/api/operator/v1/requests/${request.id}/deny`, operator, { expected_revision: request.revision, reason: "no\u0000" }));
      expect(deny.status).toBe(400);
      expect(detailsOf(deny.body).violations).toContainEqual(expect.objectContaining({ field: "reason" }));
      expect((await get(`/api/operator/v1/requests/${request.id}`, operator)).body.status).toBe("pending");
      expect((await get("/api/operator/v1/requests?requester=%00", operator)).status).toBe(400);
      expect((await get("/api/agent/v1/operations/op_%00", alice)).status).toBe(400);
    });
  });

  describe("operator decisions", () => {
    const decide = async (id: string, action: string, body: Json) => api.json(await api.call("POST", `/api/operator/v1/requests/${id}/${action}`, operator, body));
    const windowRequest = async () => {
      const submitted = await api.post(alice, httpOp(key("window"), `/window/${keys}`));
      return (await get(`/api/operator/v1/requests/${submitted.body.approval_id}`, operator)).body;
    };

    it("unYOLO's constraints narrow an approval like minutes and max_uses; both forms at once, or a wider one, is 400", async () => {
      const request = await windowRequest();
      expect(request).toMatchObject({ mode: "window", minutes: 60, max_uses: 10 });
      const both = await decide(request.id, "approve", { expected_revision: request.revision, minutes: 30, constraints: { max_uses: 2 } });
      expect(both.status).toBe(400);
      expect(detailsOf(both.body).violations).toContainEqual(expect.objectContaining({ field: "constraints" }));
      expect((await decide(request.id, "approve", { expected_revision: request.revision, constraints: { duration_seconds: 7200 } })).status).toBe(400);
      expect((await decide(request.id, "approve", { expected_revision: request.revision, constraints: { duration_seconds: 59 } })).status).toBe(400);
      const approved = await decide(request.id, "approve", { expected_revision: request.revision, constraints: { duration_seconds: 1830, max_uses: 3 } });
      expect(approved.status).toBe(200);
      // 1830 seconds narrow to 30 whole minutes; one use went to the operation that asked.
      expect(approved.body).toMatchObject({ status: "active", minutes: 30, max_uses: 3, uses_remaining: 2, used_count: 1 });
    });

    it("Connect JSON takes the same constraints", async () => {
      const request = await windowRequest();
      const approved = await connect("operator", "ApproveRequest", operator, JSON.stringify({ id: request.id, expected_revision: request.revision, constraints: { max_uses: 4 } }));
      expect(approved.status).toBe(200);
      expect(approved.body.request).toMatchObject({ status: "active", max_uses: 4, used_count: 1 });
    });

    it("with an idempotency key the same decision again answers 200 with the request; another decision with the key is 409", async () => {
      const { request } = await pendingRequest();
      const decision = { expected_revision: request.revision, reason: "looks fine", idempotency_key: key("decision") };
      const first = await decide(request.id, "approve", decision);
      expect(first.status).toBe(200);
      const again = await decide(request.id, "approve", decision);
      expect(again).toMatchObject({ status: 200, body: { id: request.id, status: first.body.status, revision: first.body.revision } });

      const denyWithKey = await decide(request.id, "deny", { ...decision, reason: "" });
      expect(denyWithKey.status).toBe(409);
      expect(detailsOf(denyWithKey.body).info).toMatchObject({ reason: "IDEMPOTENCY_CONFLICT", metadata: { code: "idempotency_conflict" } });
      const other = await pendingRequest();
      const elsewhere = await decide(other.request.id, "approve", { ...decision, expected_revision: other.request.revision });
      expect(elsewhere.status).toBe(409);
      expect((await get(`/api/operator/v1/requests/${other.request.id}`, operator)).body.status).toBe("pending");
      // Without the key the same body is what it always was: the request is no longer pending.
      expect((await decide(request.id, "approve", { expected_revision: request.revision })).status).toBe(409);
      expect((await decide(request.id, "approve", { ...decision, idempotency_key: "-bad" })).status).toBe(400);
    });

    it("concurrent twins of a keyed decision decide once and all answer 200", async () => {
      const { request } = await pendingRequest();
      const decision = { expected_revision: request.revision, idempotency_key: key("twins") };
      const answers = await Promise.all(Array.from({ length: 6 }, () => decide(request.id, "deny", decision)));
      expect(answers.map((answer) => answer.status)).toEqual(Array(6).fill(200));
      const now = (await get(`/api/operator/v1/requests/${request.id}`, operator)).body;
      expect(now).toMatchObject({ status: "denied", revision: request.revision + 1 });
    });
  });

  describe("the operator event stream", () => {
    /** Reads an SSE response until `done` holds for what was read; the test's own timeout bounds it. */
    const readUntil = async (response: Response, done: (text: string) => boolean) => {
      const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
      let text = "";
      while (!done(text)) text += (await reader.read()).value ?? "";
      await reader.cancel();
      return text;
    };
    const watch = (headers: Record<string, string> = {}) =>
      fetch(`${server.url}/api/operator/v1/events`, { headers: { authorization: `Bearer ${operator}`, ...headers } });
    const eventsIn = (text: string) =>
      [...text.matchAll(/id: (\d+)\nevent: ([\w.]+)\ndata: (.*)\n/g)].map(([, id, kind, data]): Json => ({ seq: Number(id), kind, ...(JSON.parse(data!) as Json) }));

    it("a fresh watch replays the events of every open request first, then follows live; Last-Event-ID resumes after it", async () => {
      const open = await pendingRequest();
      const closed = await pendingRequest();
      await api.call("POST", `/api/operator/v1/requests/${closed.request.id}/deny`, operator, { expected_revision: closed.request.revision });

      const response = await watch();
      expect(response.headers.get("cache-control")).toBe("no-store");
      expect(response.headers.get("x-content-type-options")).toBe("nosniff");
      let live: Json | undefined;
      const text = await readUntil(response, (read) => {
        if (live === undefined && read.includes(`"request_id":"${open.request.id}"`)) {
          live = {}; // the queue is shown: now something happens
          void api.post(alice, httpOp(key("live"))).then(({ body }) => (live = body));
        }
        return live?.approval_id !== undefined && read.includes(`"request_id":"${live.approval_id}"`);
      });
      const events = eventsIn(text);
      expect(events.find((event) => event.request_id === open.request.id)).toMatchObject({ kind: "request.created" });
      expect(events.some((event) => event.request_id === closed.request.id)).toBe(false);
      const seqs = events.map((event) => event.seq);
      expect(seqs).toEqual([...seqs].sort((a, b) => a - b));

      const createdSeq = events.find((event) => event.request_id === open.request.id)!.seq;
      await api.call("POST", `/api/operator/v1/requests/${open.request.id}/deny`, operator, { expected_revision: open.request.revision });
      const resumed = await readUntil(await watch({ "last-event-id": String(createdSeq) }), (read) => read.includes("event: request.denied") && read.includes(open.request.id));
      expect(eventsIn(resumed).every((event) => event.seq > createdSeq)).toBe(true);
    });

    it("a Last-Event-ID that is not an event id is 400, no-store", async () => {
      const response = await watch({ "last-event-id": "soon" });
      expect(response.status).toBe(400);
      expect(response.headers.get("cache-control")).toBe("no-store");
      expect(detailsOf((await response.json()) as Json).info.metadata.code).toBe("invalid_request");
    });
  });

  describe("over gRPC", () => {
    const agentClient = () => createClient(AgentOperationsService, createGrpcTransport({ baseUrl: server.url, interceptors: [bearer(alice)] }));
    const operatorClient = () => createClient(OperatorService, createGrpcTransport({ baseUrl: server.url, interceptors: [bearer(operator)] }));

    it("a NUL or a non-finite number is INVALID_ARGUMENT naming the field, with the code word, and nothing is written", async () => {
      const valid = (): Json => ({ idempotencyKey: key("grpc-nul"), operation: "http.request", target: { credential: "upstream", path: "/x" }, arguments: { method: "GET" }, reason: "r" });
      const before = await operationCount();
      for (const [change, field] of [
        [{ reason: "a\u0000b" }, "reason"],
        [{ arguments: { method: "GET", query: { n: Number.POSITIVE_INFINITY } } }, "arguments.query.n"],
      ] as const) {
        const error = await agentClient()
          .submitOperation({ ...valid(), ...change } as never)
          .then(() => undefined, (failure: unknown) => ConnectError.from(failure));
        expect(error?.code).toBe(Code.InvalidArgument);
        expect(error?.findDetails(ErrorInfoSchema)[0]?.metadata).toMatchObject({ code: "invalid_request" });
        expect(error?.findDetails(BadRequestSchema)[0]?.fieldViolations.map((violation) => violation.field)).toEqual([field]);
      }
      expect(await operationCount()).toBe(before);
    });

    it("WatchEvents without after_seq replays the open requests' events first", async () => {
      const open = await pendingRequest();
      const feed = new AbortController();
      for await (const update of operatorClient().watchEvents({}, { signal: feed.signal })) {
        if (update.event!.requestId !== open.request.id) continue;
        expect(update.event!.kind).toBe("request.created");
        feed.abort();
        break;
      }
    });
  });

  describe("headers", () => {
    it("operator answers, errors included, are no-store and nosniff; agent answers carrying an operation are no-store", async () => {
      for (const [route, token] of [
        ["/api/operator/v1/requests", operator],
        ["/api/operator/v1/requests", alice],
        ["/api/operator/v1/requests/req_nothing", operator],
      ] as const) {
        const response = await api.call("GET", route, token);
        expect(response.headers.get("cache-control"), route).toBe("no-store");
        expect(response.headers.get("x-content-type-options"), route).toBe("nosniff");
      }
      const submitted = await api.post(alice, httpOp(key("headers")));
      expect(submitted.headers.get("cache-control")).toBe("no-store");
      expect((await api.call("GET", `/api/agent/v1/operations/${submitted.body.id}`, alice)).headers.get("cache-control")).toBe("no-store");
      const viaConnect = await connect("agent", "GetOperation", alice, JSON.stringify({ id: submitted.body.id }));
      expect(viaConnect.headers.get("cache-control")).toBe("no-store");
      const connectError = await connect("operator", "GetRequest", operator, '{"id":"req_nothing"}');
      expect(connectError.headers.get("cache-control")).toBe("no-store");
      expect(connectError.headers.get("x-content-type-options")).toBe("nosniff");
    });
  });
});
