import { randomBytes } from "node:crypto";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { alice, bob, httpOp, operationsApi, operator, roomyAdmission, startUpstream, upstreamToken, writeFiles } from "../support/operations.js";
import { startTestServer, type TestServer } from "../support/server.js";

type Json = Record<string, any>;

const reasonOf = (body: Json) => body.details?.find((detail: Json) => detail["@type"] === "type.googleapis.com/google.rpc.ErrorInfo")?.reason;

const policy = {
  rules: [
    {
      id: "window",
      effect: "request",
      operations: ["http.request"],
      targets: [{ credential: "upstream", path: "/g" }],
      grant_policy: { mode: "window", default_minutes: 10, max_minutes: 30, default_max_uses: 3, max_uses: 5 },
    },
    {
      id: "allow-http",
      effect: "allow",
      operations: ["http.request"],
      targets: [
        { credential: "upstream", path: "/things" },
        { credential: "upstream", path: "/echo" },
      ],
    },
  ],
};

/** Opens a raw TCP connection to the server; resolves once connected. */
function rawSocket(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1", () => resolve(socket));
    socket.on("error", reject);
  });
}

describe("hostile clients against a real server", () => {
  let server: TestServer;
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let api: ReturnType<typeof operationsApi>;
  const logLines: string[] = [];

  beforeAll(async () => {
    upstream = await startUpstream();
    const env = { ...writeFiles(upstream.url, roomyAdmission, policy), AXON_SEALING_KEY: randomBytes(32).toString("base64") };
    server = await startTestServer({ env, logLines });
    api = operationsApi(server.url);
  });
  afterAll(async () => {
    await server?.close();
    upstream?.close();
  });

  const healthy = async () => expect((await fetch(`${server.url}/healthz`, { signal: AbortSignal.timeout(2000) })).status).toBe(200);

  describe("slow and silent connections", () => {
    it("a client dribbling its headers one byte per 200 ms does not hold up other clients", async () => {
      const socket = await rawSocket(server.port);
      const request = `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ${"a".repeat(40)}\r\n\r\n`;
      let sent = 0;
      const dribble = setInterval(() => {
        if (sent < request.length && !socket.destroyed) socket.write(request[sent++]!);
      }, 200);
      try {
        await new Promise((resolve) => setTimeout(resolve, 500));
        for (let i = 0; i < 3; i++) {
          const started = Date.now();
          await healthy();
          expect(Date.now() - started).toBeLessThan(3000); // the dribbler needs ~20 s to finish its headers
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
        expect(sent).toBeGreaterThan(2);
        expect(sent).toBeLessThan(request.length);
      } finally {
        clearInterval(dribble);
        socket.destroy();
      }
    });

    it("connections that send nothing do not hold up other clients", async () => {
      const sockets = await Promise.all(Array.from({ length: 50 }, () => rawSocket(server.port)));
      try {
        await Promise.all(Array.from({ length: 5 }, () => healthy()));
        const { status } = await api.post(alice, httpOp(`silent-${randomBytes(4).toString("hex")}`));
        expect(status).toBe(202);
      } finally {
        for (const socket of sockets) socket.destroy();
      }
    });
  });

  describe("oversized and deep requests", () => {
    it("headers beyond the limit are 431 and the server keeps serving", async () => {
      const response = await fetch(`${server.url}/healthz`, { headers: { "x-filler": "a".repeat(20 * 1024) } });
      expect(response.status).toBe(431);
      await healthy();
    });

    it("10,000 nested arrays in a body are refused with 400, not a crash", async () => {
      const deep = "[".repeat(10_000) + "]".repeat(10_000);
      for (const body of [deep, `{"idempotency_key":"deep","operation":"http.request","target":${deep},"reason":"r"}`]) {
        const raw = await fetch(`${server.url}/api/agent/v1/operations`, {
          method: "POST",
          headers: { authorization: `Bearer ${alice}`, "content-type": "application/json" },
          body,
        });
        const text = await raw.text();
        expect(raw.status, text).toBe(400);
        expect(text).not.toMatch(/at .*\.ts:\d+|node_modules|\/work\//);
        expect(typeof (JSON.parse(text) as Json).code).toBe("number");
      }
      await healthy();
    });
  });

  describe("every agent route is scoped to its client", () => {
    let routes: { name: string; method: string; route: string; body?: Json; reason: string }[];
    let sealedId: string;

    beforeAll(async () => {
      const operation = await api.post(alice, httpOp("scoped-op", "/things"));
      expect(operation.status).toBe(202);
      const grant = await api.json(
        await api.call("POST", "/api/grants", alice, { client_request_id: "scoped-grant", operation: "http.request", target: { credential: "upstream", path: "/g" }, reason: "read /g", minutes: 10, max_uses: 2 }),
      );
      expect(grant.status, JSON.stringify(grant.body)).toBe(201);
      const stream = await fetch(`${server.url}/api/agent/v1/streams`, {
        method: "POST",
        headers: { authorization: `Bearer ${alice}`, "content-type": "application/octet-stream" },
        body: new TextEncoder().encode("alice's stream"),
      });
      const streamBody = (await stream.json()) as Json;
      expect(stream.status, JSON.stringify(streamBody)).toBeLessThan(300);
      const sealed = await fetch(`${server.url}/api/agent/v1/sealed-payloads`, {
        method: "POST",
        headers: { authorization: `Bearer ${alice}`, "content-type": "application/octet-stream", "idempotency-key": "scoped-seal" },
        body: new TextEncoder().encode("alice's sealed document"),
      });
      const sealedBody = (await sealed.json()) as Json;
      expect(sealed.status, JSON.stringify(sealedBody)).toBeLessThan(300);
      sealedId = sealedBody.id;
      routes = [
        { name: "get operation", method: "GET", route: `/api/agent/v1/operations/${operation.body.id}`, reason: "OPERATION_NOT_FOUND" },
        { name: "wait operation", method: "GET", route: `/api/agent/v1/operations/${operation.body.id}/events?wait_seconds=0`, reason: "OPERATION_NOT_FOUND" },
        { name: "cancel operation", method: "POST", route: `/api/agent/v1/operations/${operation.body.id}/cancel`, body: {}, reason: "OPERATION_NOT_FOUND" },
        { name: "get grant", method: "GET", route: `/api/grants/${grant.body.id}`, reason: "GRANT_NOT_FOUND" },
        { name: "download stream", method: "GET", route: `/api/agent/v1/streams/${streamBody.id}`, reason: "STREAM_NOT_FOUND" },
      ];
    });

    it("another client gets 404 on every route, and the owner still has the resource", async () => {
      for (const { name, method, route, body, reason } of routes) {
        const response = await api.json(await api.call(method, route, bob, body));
        expect(response.status, name).toBe(404);
        expect(reasonOf(response.body), name).toBe(reason);
      }
      expect((await api.get(alice, routes[0]!.route.split("/").pop()!)).status).toBe(200);
      expect((await api.call("GET", routes[3]!.route, alice)).status).toBe(200);
      expect((await api.call("GET", routes[4]!.route, alice)).status).toBe(200);
    });

    it("another client cannot use a sealed payload: its operation fails as if the payload did not exist", async () => {
      const submitted = await api.post(bob, { ...httpOp("bob-uses-alices-seal", "/echo"), arguments: { method: "POST", body_sealed: sealedId } });
      expect(submitted.status, JSON.stringify(submitted.body)).toBe(202);
      expect(await api.waitTerminal(bob, submitted.body.id)).toMatchObject({ state: "failed", error: { code: "sealed_payload_not_found" } });
      const listed = await api.json(await api.call("GET", "/api/agent/v1/sealed-payloads", bob));
      expect(JSON.stringify(listed.body)).not.toContain(sealedId);
    });

    it("no token, a wrong token, or an operator secret is 401 on every agent route", async () => {
      const agentRoutes = [...routes, { name: "submit", method: "POST", route: "/api/agent/v1/operations", body: httpOp("x") }, { name: "list grants", method: "GET", route: "/api/grants" }];
      for (const { name, method, route, body } of agentRoutes) {
        for (const token of [undefined, operator, `${alice}x`]) {
          const response = await api.json(await api.call(method, route, token, body));
          expect(response.status, `${name} with ${token === operator ? "the operator secret" : token ? "a wrong token" : "no token"}`).toBe(401);
          expect(response.headers.get("www-authenticate")).toBe("Bearer");
        }
      }
    });

    it("a client secret is 401 on every operator route", async () => {
      for (const [method, route, body] of [
        ["GET", "/api/operator/v1/requests", undefined],
        ["GET", "/api/operator/v1/requests/apr_x", undefined],
        ["POST", "/api/operator/v1/requests/apr_x/approve", { expected_revision: 1 }],
        ["POST", "/api/operator/v1/requests/apr_x/deny", { expected_revision: 1 }],
      ] as const) {
        for (const token of [alice, bob, undefined]) {
          expect((await api.call(method, route, token, body)).status, `${method} ${route}`).toBe(401);
        }
      }
    });
  });

  it("a wrong token that looks like a secret is echoed neither in the answer nor in the logs", async () => {
    const lookalike = randomBytes(32).toString("base64url");
    const nearMiss = alice.slice(0, -4) + "AAAA";
    for (const token of [lookalike, nearMiss]) {
      for (const [method, route] of [
        ["GET", "/api/agent/v1/operations"],
        ["GET", "/api/operator/v1/requests"],
        ["GET", "/.well-known/unyolo-agent"],
      ] as const) {
        const response = await api.call(method, route, token);
        const text = `${[...response.headers].join("\n")}\n${await response.text()}`;
        expect(response.status).toBe(401);
        expect(text).not.toContain(token);
        expect(text).not.toContain(alice);
      }
      const chat = await fetch(`${server.url}/api/v1/hello_world/streaming_chat`, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: "{}" });
      expect(await chat.text()).not.toContain(token);
    }
    const logs = logLines.join("\n");
    expect(logLines.length).toBeGreaterThan(0);
    for (const value of [lookalike, nearMiss, alice, bob, operator, upstreamToken]) expect(logs).not.toContain(value);
  });
});
