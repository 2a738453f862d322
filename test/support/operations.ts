import { randomBytes } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import type { Interceptor } from "@connectrpc/connect";

type Json = Record<string, any>;

export const secret = () => randomBytes(32).toString("base64url");
export const alice = secret();
export const bob = secret();
export const carol = secret();
export const operator = secret();
export const upstreamToken = `tok_${randomBytes(24).toString("hex")}`;

/** A Connect client interceptor presenting `token` as the call's bearer. */
export const bearer =
  (token: string): Interceptor =>
  (next) =>
  (request) => {
    request.header.set("authorization", `Bearer ${token}`);
    return next(request);
  };

/** Limits no test reaches unless it means to. */
export const roomyAdmission = { requests_per_window: 10_000, client_active: 1000, client_pending: 1000, global_active: 10_000, global_executing: 1000 };

/**
 * A local upstream for http.request: records what reached it; `/hang` never answers; a path with `/hold` in it is
 * answered once `release()` is called.
 */
export function startUpstream() {
  const received: { url: string; authorization: string | undefined; traceparent: string | undefined }[] = [];
  let released = false;
  const held: (() => void)[] = [];
  const server = http.createServer((req, res) => {
    received.push({ url: req.url ?? "", authorization: req.headers.authorization, traceparent: req.headers.traceparent as string | undefined });
    if (req.url?.startsWith("/hang")) return;
    if (req.url?.includes("/hold") && !released) {
      held.push(() => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ ok: true, path: req.url })));
      return;
    }
    if (req.url?.startsWith("/fail")) {
      res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: `broken with ${upstreamToken} and Bearer abc.def.ghi\u0007` } }));
      return;
    }
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ ok: true, path: req.url }));
  });
  return new Promise<{ url: string; received: typeof received; release: () => void; close: () => void }>((resolve) =>
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      resolve({
        url: `http://127.0.0.1:${port}`,
        received,
        release: () => {
          released = true;
          for (const answer of held.splice(0)) answer();
        },
        close: () => {
          server.closeAllConnections();
          server.close();
        },
      });
    }),
  );
}

/** Everything a conformance server needs on disk: principals, credentials, admission limits. */
export function writeFiles(upstreamUrl: string, admission: Json, policy?: Json) {
  const dir = mkdtempSync(path.join(os.tmpdir(), "axon-ops-"));
  const file = (name: string, text: string) => {
    writeFileSync(path.join(dir, name), text, { mode: 0o600 });
    return path.join(dir, name);
  };
  return {
    AXON_CLIENTS_FILE: file("clients", `alice = ${alice}\nbob = ${bob}\ncarol = ${carol}\n`),
    AXON_OPERATORS_FILE: file("operators", `ops = ${operator}\n`),
    AXON_CREDENTIALS_FILE: file(
      "credentials.json",
      JSON.stringify({ upstream: { base_url: upstreamUrl, header: "Authorization", scheme: "Bearer", secret_env: "UPSTREAM_TOKEN", methods: ["GET", "POST"] } }),
    ),
    AXON_ADMISSION_FILE: file("admission.json", JSON.stringify(admission)),
    ...(policy ? { AXON_POLICY_FILE: file("policy.json", JSON.stringify(policy)) } : {}),
    UPSTREAM_TOKEN: upstreamToken,
  };
}


/** A REST client of the operations surface, as an agent or an operator would write one. */
export function operationsApi(baseUrl: string) {
  const call = (method: string, route: string, token: string | undefined, body?: unknown) =>
    fetch(baseUrl + route, {
      method,
      headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const json = async (response: Response) => ({ status: response.status, headers: response.headers, body: (await response.json()) as Json });
  const api = {
    call,
    json,
    post: async (token: string, body: Json) => json(await call("POST", "/api/agent/v1/operations", token, body)),
    get: async (token: string, id: string) => json(await call("GET", `/api/agent/v1/operations/${id}`, token)),
    /** Long-polls until the operation is terminal. */
    async waitTerminal(token: string, id: string): Promise<Json> {
      for (let revision = 0; ; ) {
        const { status, body } = await json(await call("GET", `/api/agent/v1/operations/${id}/events?after_revision=${revision}&wait_seconds=10`, token));
        if (status !== 200) throw new Error(`wait answered ${status}: ${JSON.stringify(body)}`);
        if (["succeeded", "failed", "denied", "expired", "canceled"].includes(body.state)) return body;
        revision = body.revision;
      }
    },
    /** The operator approves the operation's pending request, at its current revision. */
    async approve(operationId: string, terms: Json = {}, owner = alice) {
      const operation = await api.get(owner, operationId);
      const request = await json(await call("GET", `/api/operator/v1/requests/${operation.body.approval_id}`, operator));
      return json(await call("POST", `/api/operator/v1/requests/${request.body.id}/approve`, operator, { expected_revision: request.body.revision, ...terms }));
    },
  };
  return api;
}

export const chatOp = (key: string, reason = "say hello") => ({
  idempotency_key: key,
  operation: "agent.chat",
  target: { network: "hello_world" },
  arguments: { text: "Welsh" },
  reason,
});

export const httpOp = (key: string, pathname = "/things") => ({
  idempotency_key: key,
  operation: "http.request",
  target: { credential: "upstream", path: pathname },
  arguments: { method: "GET" },
  reason: "read the things",
});
