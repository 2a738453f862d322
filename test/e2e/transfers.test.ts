import path from "node:path";
import { createHash, randomBytes } from "node:crypto";
import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Prisma, type PrismaClient } from "../../src/store/database.js";
import { alice, bob, operationsApi, roomyAdmission, writeFiles } from "../support/operations.js";
import { createPostgresDatabase, type TestDatabase } from "../support/postgres-database.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { until } from "../support/wait.js";

type Json = Record<string, any>;

const sealingKey = randomBytes(32).toString("base64");
const allowHttp = { rules: [{ id: "allow-http", effect: "allow", operations: ["http.request"] }] };
const MiB = 1024 * 1024;
const streamMaxBytes = 10 * MiB;

/** An upstream that records every body it receives; `/echo` answers with it, `/fail-echo` quotes it in a 500. */
async function startRecordingUpstream() {
  const received: { url: string; contentType: string | undefined; body: Buffer }[] = [];
  const server = http.createServer((req, res) => {
    const pieces: Buffer[] = [];
    req.on("data", (piece: Buffer) => pieces.push(piece));
    req.on("end", () => {
      const body = Buffer.concat(pieces);
      received.push({ url: req.url ?? "", contentType: req.headers["content-type"], body });
      const text = body.toString("utf8");
      if (req.url === "/fail-echo") {
        res.writeHead(500, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: `could not parse ${text}` } }));
        return;
      }
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ received: text }));
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

/** A REST client of the transfer routes, as an agent would write one. */
function transfersApi(baseUrl: string) {
  return {
    seal: async (token: string | undefined, body: Uint8Array | string, headers: Record<string, string> = {}) => {
      const response = await fetch(`${baseUrl}/api/agent/v1/sealed-payloads`, {
        method: "POST",
        headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), "content-type": "application/octet-stream", ...headers },
        body,
      });
      return { status: response.status, headers: response.headers, body: (await response.json()) as Json };
    },
    upload: async (token: string, body: Uint8Array) => {
      const response = await fetch(`${baseUrl}/api/agent/v1/streams`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/octet-stream" },
        body,
      });
      return { status: response.status, headers: response.headers, body: (await response.json()) as Json };
    },
    download: (token: string, id: string) => fetch(`${baseUrl}/api/agent/v1/streams/${id}`, { headers: { authorization: `Bearer ${token}` } }),
  };
}

/** Every row of every table, for searching: JSON with byte columns spelled as text too. */
async function everyRow(prisma: PrismaClient): Promise<string> {
  const parts: string[] = [];
  for (const model of Object.values(Prisma.ModelName)) {
    const delegate = (prisma as unknown as Record<string, { findMany(): Promise<Record<string, unknown>[]> }>)[model[0]!.toLowerCase() + model.slice(1)]!;
    for (const row of await delegate.findMany()) {
      parts.push(JSON.stringify(row));
      for (const value of Object.values(row)) if (value instanceof Uint8Array) parts.push(Buffer.from(value).toString("latin1"));
    }
  }
  return parts.join("\n");
}

const reasonOf = (body: Json) => body.details?.find((detail: Json) => detail["@type"] === "type.googleapis.com/google.rpc.ErrorInfo")?.reason;

const sealedOp = (key: string, ref: string, pathname = "/echo") => ({
  idempotency_key: key,
  operation: "http.request",
  target: { credential: "upstream", path: pathname },
  arguments: { method: "POST", body_sealed: ref },
  reason: "send the sealed document",
});

describe.each(["sqlite", "postgresql"] as const)("Agent V1 transfers on %s", (provider) => {
  let upstream: Awaited<ReturnType<typeof startRecordingUpstream>>;
  let database: TestDatabase | undefined;
  let env: Record<string, string>;
  let server: TestServer;
  let prisma: PrismaClient;
  let api: ReturnType<typeof transfersApi>;
  let ops: ReturnType<typeof operationsApi>;
  const logLines: string[] = [];

  beforeAll(async () => {
    upstream = await startRecordingUpstream();
    database = provider === "postgresql" ? await createPostgresDatabase() : undefined;
    env = {
      ...writeFiles(upstream.url, roomyAdmission, allowHttp),
      ...(database ? { DATABASE_URL: database.url } : {}),
      AXON_SEALING_KEY: sealingKey,
      AXON_STREAM_MAX_BYTES: String(streamMaxBytes),
    };
    server = await startTestServer({ env, logLines });
    prisma = server.operations.database.prisma;
    api = transfersApi(server.url);
    ops = operationsApi(server.url);
  });
  afterAll(async () => {
    await server?.close();
    await database?.drop();
    upstream?.close();
  });

  /** Submits an operation and waits for its end. */
  async function run(token: string, body: Json): Promise<Json> {
    const submitted = await ops.post(token, body);
    expect(submitted.status, JSON.stringify(submitted.body)).toBe(202);
    return ops.waitTerminal(token, submitted.body.id);
  }

  describe("sealed payloads", () => {
    it("answers 201 with the reference, size, SHA-256 and expiry; the same key and bytes give the same reference (200)", async () => {
      const bytes = randomBytes(100);
      const first = await api.seal(alice, bytes, { "idempotency-key": "doc-1" });
      expect(first.status).toBe(201);
      expect(first.body).toEqual({
        id: expect.stringMatching(/^sealed_[A-Za-z0-9_-]{24}$/),
        size: 100,
        digest: createHash("sha256").update(bytes).digest("hex"),
        expires_at: expect.any(String),
      });
      const expiresIn = Date.parse(first.body.expires_at) - Date.now();
      expect(expiresIn).toBeGreaterThan(59 * 60_000);
      expect(expiresIn).toBeLessThanOrEqual(60 * 60_000);

      const replay = await api.seal(alice, bytes, { "idempotency-key": "doc-1" });
      expect(replay.status).toBe(200);
      expect(replay.body).toEqual(first.body);
      expect(await prisma.sealedPayload.count({ where: { clientId: "alice", idempotencyKey: "doc-1" } })).toBe(1);
    });

    it("the same key with other bytes is a conflict that stores nothing; another client may use the same key", async () => {
      const first = await api.seal(alice, "one", { "idempotency-key": "doc-conflict" });
      const conflict = await api.seal(alice, "two", { "idempotency-key": "doc-conflict" });
      expect(conflict.status).toBe(409);
      expect(conflict.body.code).toBe(10);
      expect(conflict.body.details[0]).toMatchObject({ reason: "IDEMPOTENCY_CONFLICT", metadata: { category: "conflict", sealed_payload_id: first.body.id } });
      expect(await prisma.sealedPayload.count({ where: { idempotencyKey: "doc-conflict" } })).toBe(1);
      const bobs = await api.seal(bob, "two", { "idempotency-key": "doc-conflict" });
      expect(bobs.status).toBe(201);
      expect(bobs.body.id).not.toBe(first.body.id);
    });

    it("concurrent duplicates store exactly one payload", async () => {
      const answers = await Promise.all(Array.from({ length: 10 }, () => api.seal(alice, "same bytes", { "idempotency-key": "doc-dupes" })));
      expect(new Set(answers.map((answer) => answer.body.id)).size).toBe(1);
      expect(answers.filter((answer) => answer.status === 201)).toHaveLength(1);
    });

    it("is stored encrypted: the row holds neither the plaintext nor anything derived from it but its digest", async () => {
      const plaintext = `plain-${randomBytes(16).toString("hex")}`;
      const { body } = await api.seal(alice, plaintext, { "idempotency-key": "doc-at-rest" });
      const row = await prisma.sealedPayload.findUniqueOrThrow({ where: { id: body.id } });
      expect(row.nonce.byteLength).toBe(12);
      expect(row.ciphertext.byteLength).toBe(Buffer.byteLength(plaintext) + 16);
      expect(await everyRow(prisma)).not.toContain(plaintext);
    });

    it("refuses bad requests with google.rpc.Status: content type 415, no key 400, empty 400, over 1 MiB 413, no token 401", async () => {
      const cases: [string, Promise<{ status: number; body: Json }>, number, string][] = [
        ["wrong content type", api.seal(alice, "x", { "idempotency-key": "k", "content-type": "text/plain" }), 415, "UNSUPPORTED_CONTENT_TYPE"],
        ["no content type", api.seal(alice, new Uint8Array([1]), { "idempotency-key": "k", "content-type": "" }), 415, "UNSUPPORTED_CONTENT_TYPE"],
        ["no idempotency key", api.seal(alice, "x"), 400, "IDEMPOTENCY_KEY_REQUIRED"],
        ["malformed idempotency key", api.seal(alice, "x", { "idempotency-key": "-bad key" }), 400, "INVALID_IDEMPOTENCY_KEY"],
        ["empty body", api.seal(alice, new Uint8Array(0), { "idempotency-key": "k-empty" }), 400, "EMPTY_PAYLOAD"],
        ["over 1 MiB", api.seal(alice, new Uint8Array(MiB + 1), { "idempotency-key": "k-big" }), 413, "PAYLOAD_TOO_LARGE"],
        ["no token", api.seal(undefined, "x", { "idempotency-key": "k" }), 401, "UNAUTHENTICATED"],
      ];
      for (const [name, answer, status, reason] of cases) {
        const { status: actual, body } = await answer;
        expect(actual, name).toBe(status);
        expect(reasonOf(body), name).toBe(reason);
        expect(body.message, name).toEqual(expect.any(String));
      }
      const exactlyOneMiB = await api.seal(alice, new Uint8Array(MiB).fill(7), { "idempotency-key": "k-1mib" });
      expect(exactlyOneMiB.status).toBe(201);
      const get = await fetch(`${server.url}/api/agent/v1/sealed-payloads`, { headers: { authorization: `Bearer ${alice}` } });
      expect(get.status).toBe(405);
      expect(get.headers.get("allow")).toBe("POST");
    });

    it("a chunked body over 1 MiB is refused with 413 while it arrives", async () => {
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          for (let i = 0; i < 5; i++) controller.enqueue(new Uint8Array(256 * 1024));
          controller.close();
        },
      });
      const response = await fetch(`${server.url}/api/agent/v1/sealed-payloads`, {
        method: "POST",
        headers: { authorization: `Bearer ${alice}`, "content-type": "application/octet-stream", "idempotency-key": "k-chunked" },
        body,
        duplex: "half",
      } as RequestInit);
      expect(response.status).toBe(413);
      expect(reasonOf((await response.json()) as Json)).toBe("PAYLOAD_TOO_LARGE");
      expect(await prisma.sealedPayload.count({ where: { idempotencyKey: "k-chunked" } })).toBe(0);
    });

    it("an http.request with a sealed body sends the plaintext upstream, and it appears in no row, log line, answer or error", async () => {
      const plaintext = `{"password":"sealed-${randomBytes(12).toString("hex")}"}`;
      const secretPart = plaintext.slice(14, -2);
      const sealed = await api.seal(alice, plaintext, { "idempotency-key": "doc-send" });
      const done = await run(alice, sealedOp("send-sealed", sealed.body.id));
      expect(done.state).toBe("succeeded");
      const sent = upstream.received.find((request) => request.body.toString("utf8") === plaintext);
      expect(sent).toMatchObject({ url: "/echo", contentType: "application/octet-stream" });
      // The upstream echoed it: the result keeps the answer without the sealed content.
      expect(done.result).toMatchObject({ status: 200, body: { received: expect.stringContaining("REDACTED") } });

      const failedOne = await api.seal(alice, plaintext, { "idempotency-key": "doc-send-fail" });
      const quoted = await run(alice, sealedOp("send-sealed-fail", failedOne.body.id, "/fail-echo"));
      expect(upstream.received.filter((request) => request.body.toString("utf8") === plaintext)).toHaveLength(2);
      // An error answer of a sealed request keeps no upstream text at all.
      expect(quoted.result).toMatchObject({ status: 500, body: null });

      const seen = [
        JSON.stringify(done),
        JSON.stringify(quoted),
        JSON.stringify((await ops.json(await ops.call("GET", "/api/agent/v1/operations", alice))).body),
        await everyRow(prisma),
        logLines.join("\n"),
      ].join("\n");
      expect(seen).not.toContain(secretPart);
      const operation = await ops.get(alice, done.id);
      expect(operation.body.arguments).toEqual({ method: "POST", body_sealed: sealed.body.id });
      expect(operation.body.presentation.summary).toContain("a sealed body");
    });

    it("is usable once: a second operation with the reference fails with sealed_payload_consumed", async () => {
      const sealed = await api.seal(alice, "use me once", { "idempotency-key": "doc-once" });
      expect((await run(alice, sealedOp("once-1", sealed.body.id))).state).toBe("succeeded");
      const again = await run(alice, sealedOp("once-2", sealed.body.id));
      expect(again).toMatchObject({ state: "failed", error: { code: "sealed_payload_consumed", message: expect.any(String) } });
      // The content went with its first use.
      const row = await prisma.sealedPayload.findUniqueOrThrow({ where: { id: sealed.body.id } });
      expect(row.consumedAt).not.toBeNull();
      expect(row.ciphertext.byteLength).toBe(0);
      // Its key still answers with the same (used) reference.
      expect((await api.seal(alice, "use me once", { "idempotency-key": "doc-once" })).body.id).toBe(sealed.body.id);
    });

    it("belongs to its owner: another client's operation finds nothing, and the owner can still use it", async () => {
      const sealed = await api.seal(alice, "alice's own", { "idempotency-key": "doc-owner" });
      const bobs = await run(bob, sealedOp("bob-steals", sealed.body.id));
      expect(bobs).toMatchObject({ state: "failed", error: { code: "sealed_payload_not_found" } });
      expect((await run(alice, sealedOp("alice-uses", sealed.body.id))).state).toBe("succeeded");
    });

    it("an expired reference is refused with sealed_payload_expired", async () => {
      const sealed = await api.seal(alice, "too late", { "idempotency-key": "doc-expired" });
      await prisma.sealedPayload.update({ where: { id: sealed.body.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
      expect(await run(alice, sealedOp("late", sealed.body.id))).toMatchObject({ state: "failed", error: { code: "sealed_payload_expired" } });
      // An expired payload no longer holds its key: sealing again under it makes a new one.
      const again = await api.seal(alice, "too late", { "idempotency-key": "doc-expired" });
      expect(again.status).toBe(201);
      expect(again.body.id).not.toBe(sealed.body.id);
    });

    it("a tampered ciphertext fails safely: sealed_payload_unreadable, no content, no stack, nothing sent", async () => {
      const plaintext = `tamper-${randomBytes(8).toString("hex")}`;
      const sealed = await api.seal(alice, plaintext, { "idempotency-key": "doc-tamper" });
      const row = await prisma.sealedPayload.findUniqueOrThrow({ where: { id: sealed.body.id } });
      const flipped = new Uint8Array(row.ciphertext);
      flipped[3] = flipped[3]! ^ 0x01;
      await prisma.sealedPayload.update({ where: { id: row.id }, data: { ciphertext: flipped } });
      const before = upstream.received.length;
      const done = await run(alice, sealedOp("tampered", sealed.body.id));
      expect(done).toMatchObject({ state: "failed", error: { code: "sealed_payload_unreadable", message: "the sealed body could not be opened" } });
      expect(upstream.received.length).toBe(before);
      expect(JSON.stringify(done)).not.toMatch(/at .*\.ts|Error:|unsupported state/);
      expect(logLines.join("\n")).not.toContain(plaintext);
    });

    it("a ciphertext moved into another payload's row does not open", async () => {
      const source = await api.seal(alice, "moved content", { "idempotency-key": "doc-move-source" });
      const target = await api.seal(alice, "other content", { "idempotency-key": "doc-move-target" });
      const row = await prisma.sealedPayload.findUniqueOrThrow({ where: { id: source.body.id } });
      await prisma.sealedPayload.update({ where: { id: target.body.id }, data: { nonce: row.nonce, ciphertext: row.ciphertext } });
      expect(await run(alice, sealedOp("moved", target.body.id))).toMatchObject({ state: "failed", error: { code: "sealed_payload_unreadable" } });
      // Nor into another client's row: the owner is bound in too.
      const bobs = await api.seal(bob, "bob content", { "idempotency-key": "doc-move-bob" });
      await prisma.sealedPayload.update({ where: { id: source.body.id }, data: { clientId: "bob", idempotencyKey: null } });
      expect(await run(bob, sealedOp("moved-owner", source.body.id))).toMatchObject({ state: "failed", error: { code: "sealed_payload_unreadable" } });
      expect(bobs.status).toBe(201);
    });

    it("a malformed reference, a reference with a body, or one on a GET is refused at submission", async () => {
      for (const [args, field] of [
        [{ method: "POST", body_sealed: "not-a-reference" }, "arguments.body_sealed"],
        [{ method: "POST", body_sealed: 42 }, "arguments.body_sealed"],
        [{ method: "POST", body_sealed: `sealed_${"a".repeat(24)}`, body: "x" }, "arguments.body"],
        [{ method: "GET", body_sealed: `sealed_${"a".repeat(24)}` }, "arguments.body_sealed"],
      ] as const) {
        const { status, body } = await ops.post(alice, { ...sealedOp(`bad-${field}-${JSON.stringify(args).length}`, ""), arguments: args });
        expect(status, JSON.stringify(args)).toBe(400);
        expect(body.details.find((detail: Json) => detail.fieldViolations)?.fieldViolations.map((v: Json) => v.field)).toContain(field);
      }
    });
  });

  describe("streams", () => {
    it("a 600 KiB stream round trips byte-exact with its SHA-256, in 256 KiB chunks, and is gone after one full download", async () => {
      const content = randomBytes(600 * 1024);
      const sha256 = createHash("sha256").update(content).digest();
      const uploaded = await api.upload(alice, content);
      expect(uploaded.status).toBe(201);
      expect(uploaded.body).toEqual({
        id: expect.stringMatching(/^stream_[A-Za-z0-9_-]{24}$/),
        transfer_id: expect.stringMatching(/^xfer_[A-Za-z0-9_-]{24}$/),
        size: content.byteLength,
        sha256: sha256.toString("hex"),
      });
      const chunks = await prisma.transferChunk.findMany({ where: { streamId: uploaded.body.id }, orderBy: { index: "asc" } });
      expect(chunks.map((chunk) => chunk.data.byteLength)).toEqual([256 * 1024, 256 * 1024, 88 * 1024]);

      const response = await api.download(alice, uploaded.body.id);
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toBe("application/octet-stream");
      expect(response.headers.get("content-length")).toBe(String(content.byteLength));
      expect(response.headers.get("repr-digest")).toBe(`sha-256=:${sha256.toString("base64")}:`);
      expect(Buffer.from(await response.arrayBuffer()).equals(content)).toBe(true);

      await until(async () => (await prisma.transferStream.count({ where: { id: uploaded.body.id } })) === 0, "the downloaded stream to be deleted", 5000);
      expect(await prisma.transferChunk.count({ where: { streamId: uploaded.body.id } })).toBe(0);
      const again = await api.download(alice, uploaded.body.id);
      expect(again.status).toBe(404);
      expect(reasonOf((await again.json()) as Json)).toBe("STREAM_NOT_FOUND");
    });

    it("only its owner may download it: another client gets 404 and the stream stays", async () => {
      const uploaded = await api.upload(alice, randomBytes(1000));
      const bobs = await api.download(bob, uploaded.body.id);
      expect(bobs.status).toBe(404);
      expect(reasonOf((await bobs.json()) as Json)).toBe("STREAM_NOT_FOUND");
      expect((await api.download(alice, uploaded.body.id)).status).toBe(200);
    });

    it("a download cut off midway leaves the stream for another try", async () => {
      // More than the socket buffers of a client that stops reading can hold, so the server cannot finish sending.
      const content = randomBytes(8 * MiB);
      const uploaded = await api.upload(alice, content);
      await new Promise<void>((resolve, reject) => {
        const request = http.get(`${server.url}/api/agent/v1/streams/${uploaded.body.id}`, { headers: { authorization: `Bearer ${alice}` }, agent: false }, (response) => {
          response.pause();
          setTimeout(() => {
            request.destroy();
            resolve();
          }, 300);
        });
        request.on("error", () => undefined);
        setTimeout(() => reject(new Error("no answer")), 5000);
      });
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(await prisma.transferStream.count({ where: { id: uploaded.body.id } })).toBe(1);
      const full = await api.download(alice, uploaded.body.id);
      expect(Buffer.from(await full.arrayBuffer()).equals(content)).toBe(true);
    });

    it("an upload without Content-Length is 411; one over the size cap is 413; an empty one is 400", async () => {
      const chunked = await new Promise<{ status: number; body: Json }>((resolve, reject) => {
        const request = http.request(`${server.url}/api/agent/v1/streams`, { method: "POST", headers: { authorization: `Bearer ${alice}`, "transfer-encoding": "chunked" } }, (response) => {
          const pieces: Buffer[] = [];
          response.on("data", (piece: Buffer) => pieces.push(piece));
          response.on("end", () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(Buffer.concat(pieces).toString("utf8")) as Json }));
        });
        request.on("error", reject);
        request.end("some bytes");
      });
      expect(chunked.status).toBe(411);
      expect(chunked.body).toMatchObject({ code: 3 });
      expect(reasonOf(chunked.body)).toBe("LENGTH_REQUIRED");

      const tooLarge = await api.upload(alice, new Uint8Array(streamMaxBytes + 1));
      expect(tooLarge.status).toBe(413);
      expect(reasonOf(tooLarge.body)).toBe("PAYLOAD_TOO_LARGE");
      const empty = await api.upload(alice, new Uint8Array(0));
      expect(empty.status).toBe(400);
      expect(reasonOf(empty.body)).toBe("EMPTY_STREAM");
      const noToken = await fetch(`${server.url}/api/agent/v1/streams`, { method: "POST", body: "x" });
      expect(noToken.status).toBe(401);
      expect(noToken.headers.get("www-authenticate")).toBe("Bearer");
    });

    it("an aborted upload leaves nothing behind", async () => {
      const socketClosed = new Promise<void>((resolve) => {
        const request = http.request(`${server.url}/api/agent/v1/streams`, {
          method: "POST",
          headers: { authorization: `Bearer ${bob}`, "content-length": String(600 * 1024) },
          agent: false,
        });
        request.on("error", () => resolve());
        request.on("close", () => resolve());
        request.write(randomBytes(300 * 1024));
        // Once the first chunk is stored, the client goes away.
        void until(async () => (await prisma.transferChunk.count({ where: { stream: { clientId: "bob" } } })) > 0, "a first chunk stored", 5000).then(() => request.destroy());
      });
      await socketClosed;
      await until(async () => (await prisma.transferStream.count({ where: { clientId: "bob" } })) === 0, "the abandoned upload to be removed", 5000);
      expect(await prisma.transferChunk.count({ where: { stream: { clientId: "bob" } } })).toBe(0);
    });
  });

  /** Another server on this suite's database (for SQLite: the same file, as a second process would open it). */
  const replicaEnv = (extra: Record<string, string> = {}) => ({
    ...env,
    DATABASE_URL: database?.url ?? `file:${path.join(server.dataDir, "axon.db")}`,
    ...extra,
  });

  it("a second replica on the same database with the same key opens the payloads and serves the streams the first stored", async () => {
    const replica = await startTestServer({ env: replicaEnv() });
    try {
      const sealed = await api.seal(alice, "for the other replica", { "idempotency-key": "doc-replica" });
      const opened = await replica.operations.transfers.sealedPayloads.consume("alice", sealed.body.id);
      expect(Buffer.from(opened).toString("utf8")).toBe("for the other replica");

      const content = randomBytes(300 * 1024);
      const uploaded = await api.upload(alice, content);
      const response = await transfersApi(replica.url).download(alice, uploaded.body.id);
      expect(response.status).toBe(200);
      expect(Buffer.from(await response.arrayBuffer()).equals(content)).toBe(true);
      // The replica deletes it once the download went out whole; the first server then knows it no more. A download
      // that starts while the chunks are being deleted is cut off (its body cannot be completed): not gone yet.
      await until(async () => {
        try {
          const again = await api.download(alice, uploaded.body.id);
          await again.arrayBuffer();
          return again.status === 404;
        } catch {
          return false;
        }
      }, "the stream to be gone on the first server", 5000);
    } finally {
      await replica.close();
    }
  });

  it("a replica with another sealing key cannot open the payloads", async () => {
    const stranger = await startTestServer({ env: replicaEnv({ AXON_SEALING_KEY: randomBytes(32).toString("base64") }) });
    try {
      const sealed = await api.seal(alice, "not for strangers", { "idempotency-key": "doc-stranger" });
      await expect(stranger.operations.transfers.sealedPayloads.consume("alice", sealed.body.id)).rejects.toMatchObject({ reason: "SEALED_PAYLOAD_UNREADABLE" });
    } finally {
      await stranger.close();
    }
  });
});

describe("transfer caps", () => {
  let server: TestServer;
  let upstream: Awaited<ReturnType<typeof startRecordingUpstream>>;
  let api: ReturnType<typeof transfersApi>;

  beforeAll(async () => {
    upstream = await startRecordingUpstream();
    server = await startTestServer({
      env: {
        ...writeFiles(upstream.url, roomyAdmission, allowHttp),
        AXON_SEALED_MAX_PER_CLIENT: "2",
        AXON_SEALED_MAX_TOTAL_BYTES: "1000",
        AXON_STREAM_MAX_CLIENT_BYTES: "1000",
      },
    });
    api = transfersApi(server.url);
  });
  afterAll(async () => {
    await server?.close();
    upstream?.close();
  });

  it("a client's unused sealed payloads are capped: the next one is 429 with Retry-After and QuotaFailure, and stores nothing", async () => {
    expect((await api.seal(alice, "a", { "idempotency-key": "cap-1" })).status).toBe(201);
    expect((await api.seal(alice, "b", { "idempotency-key": "cap-2" })).status).toBe(201);
    const refused = await api.seal(alice, "c", { "idempotency-key": "cap-3" });
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("2");
    expect(refused.body.code).toBe(8);
    expect(refused.body.details).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ reason: "CLIENT_SEALED_PAYLOAD_LIMIT", metadata: expect.objectContaining({ category: "rate_limited" }) }),
        expect.objectContaining({ "@type": "type.googleapis.com/google.rpc.QuotaFailure" }),
        expect.objectContaining({ "@type": "type.googleapis.com/google.rpc.RetryInfo" }),
      ]),
    );
    // A replay is not a new payload and is never refused.
    expect((await api.seal(alice, "a", { "idempotency-key": "cap-1" })).status).toBe(200);
    expect(await server.operations.database.prisma.sealedPayload.count({ where: { idempotencyKey: "cap-3" } })).toBe(0);
  });

  it("the server's sealed bytes are capped across clients", async () => {
    expect((await api.seal(bob, new Uint8Array(999), { "idempotency-key": "big" })).status).toBe(429);
    expect(reasonOf((await api.seal(bob, new Uint8Array(999), { "idempotency-key": "big" })).body)).toBe("GLOBAL_SEALED_BYTES_LIMIT");
  });

  it("a client's stored stream bytes are capped; a download frees them", async () => {
    const first = await api.upload(alice, randomBytes(600));
    expect(first.status).toBe(201);
    const refused = await api.upload(alice, randomBytes(600));
    expect(refused.status).toBe(429);
    expect(reasonOf(refused.body)).toBe("CLIENT_STREAM_BYTES_LIMIT");
    expect((await api.upload(bob, randomBytes(600))).status).toBe(201);
    await (await api.download(alice, first.body.id)).arrayBuffer();
    await until(async () => (await api.upload(alice, randomBytes(600))).status === 201, "an upload to fit again", 5000);
  });
});
