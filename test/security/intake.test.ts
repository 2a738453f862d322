import http2 from "node:http2";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentOperationsService } from "../../src/gen/axon/agent/v1/agent_pb.js";
import { OperatorService } from "../../src/gen/axon/operator/v1/operator_pb.js";
import { compileRestRoutes } from "../../src/server/rest/http-rule.js";
import { envelope } from "../support/envelopes.js";
import { alice, operator, roomyAdmission, writeFiles } from "../support/operations.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { until, within } from "../support/wait.js";

type Json = Record<string, any>;

/** What came back on a raw HTTP/1.1 connection, and whether the server closed it. */
interface RawAnswer {
  status: number;
  head: string;
  body: string;
}

const errorInfo = (body: Json) => (body.details as Json[] | undefined)?.find((detail) => detail["@type"] === "type.googleapis.com/google.rpc.ErrorInfo");

/** A raw HTTP/1.1 connection: the test writes what it likes and reads the answer up to the server's close. */
function rawConnection(port: number) {
  const socket = net.connect(port, "127.0.0.1");
  socket.on("error", () => {});
  let text = "";
  socket.setEncoding("latin1").on("data", (chunk: string) => (text += chunk));
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  return {
    socket,
    /** Resolves once the server has closed the connection, with the one answer it sent. */
    async answer(): Promise<RawAnswer> {
      await closed;
      const split = text.indexOf("\r\n\r\n");
      const head = text.slice(0, split).toLowerCase();
      const body = text.slice(split + 4);
      return { status: Number(text.slice(9, 12)), head, body: head.includes("transfer-encoding: chunked") ? unchunked(body) : body };
    },
    closed,
  };
}

function unchunked(body: string): string {
  let text = "";
  for (let at = 0; ; ) {
    const lineEnd = body.indexOf("\r\n", at);
    const size = parseInt(body.slice(at, lineEnd), 16);
    if (!(size > 0)) return text;
    text += body.slice(lineEnd + 2, lineEnd + 2 + size);
    at = lineEnd + 2 + size + 2;
  }
}

/**
 * Sends a request's headers and one byte of the body they declare (1 MB unless `content-length` says otherwise), then
 * nothing more: an answer here came before the body, and the connection must be closed by the server (the wait fails
 * otherwise).
 */
async function answeredBeforeBody(port: number, method: string, path: string, headers: Record<string, string> = {}, body = "{"): Promise<RawAnswer> {
  const connection = rawConnection(port);
  const lines = Object.entries({ host: "127.0.0.1", "content-type": "application/json", "content-length": "1000000", ...headers }).map(([name, value]) => `${name}: ${value}`);
  connection.socket.write(`${method} ${path} HTTP/1.1\r\n${lines.join("\r\n")}\r\n\r\n${body}`);
  return within(bodyTimeoutSeconds * 1000 + 10_000, connection.answer(), `${method} ${path} answered and closed before its body`);
}

/** The same over h2c: headers and one DATA byte, no END_STREAM; resolves with the response headers once the stream closes. */
async function h2AnsweredBeforeBody(url: string, headers: http2.OutgoingHttpHeaders): Promise<{ headers: http2.IncomingHttpHeaders; rstCode: number }> {
  const session = http2.connect(url);
  session.on("error", () => {});
  try {
    const stream = session.request(headers, { endStream: false });
    stream.on("error", () => {});
    stream.write(Buffer.from([0]));
    // A trailers-only answer carries its status in the headers; a streamed one in the trailers.
    const answer: http2.IncomingHttpHeaders = {};
    stream.once("response", (received) => Object.assign(answer, received));
    stream.once("trailers", (received) => Object.assign(answer, received));
    stream.resume();
    await within(10_000, new Promise((resolve) => stream.once("close", resolve)), `${String(headers[":path"])} closed before its body`);
    return { headers: answer, rstCode: stream.rstCode ?? 0 };
  } finally {
    session.destroy();
  }
}

const authenticatedServices = [AgentOperationsService, OperatorService];
const bodyTimeoutSeconds = 2;

describe("the intake", () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer({
      env: writeFiles("http://127.0.0.1:9", roomyAdmission),
      config: { bodyTimeoutSeconds, headersTimeoutSeconds: 2, idleTimeoutSeconds: 1, unauthenticatedBodyBytes: 256 * 1024 },
    });
  });
  afterAll(async () => {
    await server?.close();
  });

  describe("authentication before the body", () => {
    const restRoutes = compileRestRoutes(authenticatedServices).map((route) => ({
      method: route.httpMethod,
      path: route.template.replace(/\{[^}]+\}/g, "x").replace(/:(\w+)$/, ":$1"),
    }));
    const plainRoutes = [
      { method: "POST", path: "/api/agent/v1/sealed-payloads" },
      { method: "POST", path: "/api/agent/v1/streams" },
      { method: "GET", path: "/api/agent/v1/streams/x" },
      { method: "GET", path: "/api/operator/v1/events" },
    ];

    it("every authenticated REST and plain HTTP route answers 401 before reading the body, and closes the connection", async () => {
      expect(restRoutes.length).toBeGreaterThan(10);
      for (const { method, path } of [...restRoutes, ...plainRoutes]) {
        for (const token of [undefined, `${alice}x`]) {
          const answer = await answeredBeforeBody(server.port, method, path, token ? { authorization: `Bearer ${token}` } : {});
          expect(answer.status, `${method} ${path}`).toBe(401);
          expect(errorInfo(JSON.parse(answer.body))?.metadata.category).toBe("authentication");
        }
      }
    });

    it("MCP, open to callers without a token as neuro-san's is, answers a token that names no client 401 before reading the body", async () => {
      const answer = await answeredBeforeBody(server.port, "POST", "/mcp", { authorization: `Bearer ${alice}x`, "content-type": "application/json" });
      expect(answer.status).toBe(401);
      expect(errorInfo(JSON.parse(answer.body))?.metadata.category).toBe("authentication");
    });

    it("every authenticated Connect method answers 401 before reading the body, unary and streaming", async () => {
      for (const service of authenticatedServices) {
        for (const method of service.methods) {
          const streaming = method.methodKind !== "unary";
          const answer = await answeredBeforeBody(server.port, "POST", `/${service.typeName}/${method.name}`, {
            "content-type": streaming ? "application/connect+json" : "application/json",
          });
          // A Connect stream carries its error in the body's end-of-stream message, with HTTP 200.
          if (streaming) expect(answer.body, method.name).toContain('"code":"unauthenticated"');
          else expect(answer.status, method.name).toBe(401);
        }
      }
    });

    it("every authenticated gRPC method over HTTP/2 answers UNAUTHENTICATED before the message, and the stream ends", async () => {
      for (const service of authenticatedServices) {
        for (const method of service.methods) {
          const { headers, rstCode } = await h2AnsweredBeforeBody(server.url, {
            ":method": "POST",
            ":path": `/${service.typeName}/${method.name}`,
            "content-type": "application/grpc",
            te: "trailers",
          });
          expect(headers["grpc-status"], method.name).toBe("16");
          expect(rstCode, method.name).toBe(http2.constants.NGHTTP2_NO_ERROR);
        }
      }
    });

    it("REST, MCP and transfers over HTTP/2 answer a bad token 401 before the body and reset the stream", async () => {
      for (const path of ["/api/agent/v1/operations", "/mcp", "/api/agent/v1/sealed-payloads"]) {
        const { headers, rstCode } = await h2AnsweredBeforeBody(server.url, {
          ":method": "POST",
          ":path": path,
          "content-type": "application/json",
          authorization: `Bearer ${alice}x`,
        });
        expect(headers[":status"], path).toBe(401);
        // NO_ERROR: reset as soon as the answer was out, not at the body deadline (CANCEL).
        expect(rstCode, path).toBe(http2.constants.NGHTTP2_NO_ERROR);
      }
    });

    it("malformed JSON without a token is 401, not 400", async () => {
      for (const [path, type] of [
        ["/api/agent/v1/operations", "application/json"],
        ["/api/operator/v1/requests/x/approve", "application/json"],
        ["/axon.agent.v1.AgentOperationsService/SubmitOperation", "application/json"],
      ] as const) {
        const response = await fetch(`${server.url}${path}`, { method: "POST", headers: { "content-type": type }, body: "{not json" });
        expect(response.status, path).toBe(401);
      }
    });
  });

  describe("timeouts", () => {
    it("a body dribbled one byte at a time is answered 408 at the body deadline and its connection closed", async () => {
      const connection = rawConnection(server.port);
      connection.socket.write("POST /api/v1/greeter/streaming_chat HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n");
      let sent = 0;
      const dribble = setInterval(() => connection.socket.write("{"[0]!, () => sent++), 250);
      try {
        const answer = await within(bodyTimeoutSeconds * 1000 + 10_000, connection.answer(), "the dribbled upload is cut");
        expect(answer.status).toBe(408);
        expect(answer.head).toContain("connection: close");
        expect(errorInfo(JSON.parse(answer.body))).toMatchObject({ reason: "REQUEST_BODY_TIMEOUT", metadata: { category: "timeout" } });
        // It was still sending when it was cut: a deadline, not an idle timeout.
        expect(sent).toBeGreaterThan(2);
      } finally {
        clearInterval(dribble);
      }
    });

    it("an authenticated stream upload gets time in proportion to its declared size", async () => {
      const size = 256 * 1024; // 4 s more at the 64 KiB/s the deadline allows beyond the body timeout
      const upload = rawConnection(server.port);
      upload.socket.write(
        `POST /api/agent/v1/streams HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${alice}\r\nconnection: close\r\ncontent-type: application/octet-stream\r\ncontent-length: ${size}\r\n\r\n`,
      );
      upload.socket.write(Buffer.alloc(size / 2, 1));
      // An unauthenticated upload started with it is cut at the plain body deadline...
      const stalled = rawConnection(server.port);
      stalled.socket.write("POST /api/v1/greeter/streaming_chat HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{");
      expect((await within(bodyTimeoutSeconds * 1000 + 10_000, stalled.answer(), "the unauthenticated upload is cut")).status).toBe(408);
      // ...while the client's stream, past that deadline, may still finish.
      upload.socket.write(Buffer.alloc(size / 2, 1));
      const answer = await within(10_000, upload.answer(), "the stream upload is answered");
      expect(answer.status, answer.body).toBe(201);
    });

    it("headers dribbled past the headers timeout are answered 408 and the connection closed", async () => {
      const connection = rawConnection(server.port);
      const request = `GET /healthz HTTP/1.1\r\nhost: x\r\nx-slow: ${"a".repeat(200)}\r\n\r\n`;
      let sent = 0;
      const dribble = setInterval(() => connection.socket.write(request[sent++] ?? ""), 250);
      try {
        const answer = await within(20_000, connection.answer(), "the dribbled headers are cut");
        expect(answer.status).toBe(408);
        expect(sent).toBeLessThan(request.length);
      } finally {
        clearInterval(dribble);
      }
    });

    it("an HTTP/2 body that stalls is reset at the body deadline", async () => {
      const session = http2.connect(server.url);
      session.on("error", () => {});
      try {
        const stream = session.request({ ":method": "POST", ":path": "/api/v1/greeter/streaming_chat", "content-type": "application/json" }, { endStream: false });
        stream.on("error", () => {});
        stream.write("{");
        await within(bodyTimeoutSeconds * 1000 + 10_000, new Promise((resolve) => stream.once("close", resolve)), "the stalled stream is reset");
        expect(stream.rstCode).toBe(http2.constants.NGHTTP2_CANCEL);
      } finally {
        session.destroy();
      }
    });

    it("an HTTP/2 connection that sends only the preface is closed after the idle timeout", async () => {
      const socket = net.connect(server.port, "127.0.0.1");
      socket.on("error", () => {});
      socket.write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
      socket.write(Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0])); // an empty SETTINGS frame
      socket.resume();
      await within(15_000, new Promise((resolve) => socket.once("close", resolve)), "the idle HTTP/2 connection is closed");
    });

    it("a long-lived stream outlives the body and idle timeouts while a stalled upload beside it is cut", async () => {
      const session = http2.connect(server.url);
      session.on("error", () => {});
      try {
        // The operator feed over SSE on the same HTTP/2 connection, opened before the stalled upload.
        const watch = session.request({ ":method": "GET", ":path": "/api/operator/v1/events", authorization: `Bearer ${operator}` });
        let events = "";
        watch.setEncoding("utf8").on("data", (chunk: string) => (events += chunk));
        await until(() => events.includes(": connected"), "the watch is open");
        const upload = session.request({ ":method": "POST", ":path": "/api/v1/greeter/streaming_chat", "content-type": "application/json" }, { endStream: false });
        upload.on("error", () => {});
        upload.write("{");
        await within(bodyTimeoutSeconds * 1000 + 10_000, new Promise((resolve) => upload.once("close", resolve)), "the stalled upload is cut");
        // Past both deadlines, the watch is still open and its connection still serves.
        const health = session.request({ ":method": "GET", ":path": "/healthz" });
        const status = await new Promise((resolve) => health.once("response", (headers) => resolve(headers[":status"])));
        health.resume();
        expect(status).toBe(200);
        expect(watch.closed).toBe(false);
        expect(watch.destroyed).toBe(false);
      } finally {
        session.destroy();
      }
    });
  });

  describe("the unauthenticated budget", () => {
    // Uploads that stall must hold their bytes for the whole test: a long body timeout here.
    let roomy: TestServer;
    beforeAll(async () => {
      roomy = await startTestServer({ env: writeFiles("http://127.0.0.1:9", roomyAdmission), config: { bodyTimeoutSeconds: 120, unauthenticatedBodyBytes: 256 * 1024 } });
    });
    afterAll(async () => {
      await roomy?.close();
    });

    it("past the budget, an unauthenticated body is refused 503 with Retry-After and its connection closed; the budget comes back", async () => {
      // Each holds 100 KiB of a body it never finishes: the third passes the 256 KiB budget.
      const holders = Array.from({ length: 2 }, () => rawConnection(roomy.port));
      const partial = `{"user_message":{"text":"${"a".repeat(100 * 1024)}`;
      for (const holder of holders) {
        holder.socket.write(`POST /api/v1/greeter/streaming_chat HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 1000000\r\n\r\n${partial}`);
      }
      // The server has read them when a third connection's bytes no longer fit.
      const refused = await until(async () => {
        const answer = await answeredBeforeBody(roomy.port, "POST", "/api/v1/greeter/streaming_chat", {}, partial);
        return answer.status === 503 ? answer : undefined;
      }, "the budget is full");
      expect(refused.head).toContain("retry-after: 1");
      expect(refused.head).toContain("connection: close");
      expect(errorInfo(JSON.parse(refused.body))).toMatchObject({ reason: "INTAKE_FULL", metadata: { category: "unavailable" } });
      // MCP without a token is metered the same.
      const mcp = await answeredBeforeBody(roomy.port, "POST", "/mcp", { "content-type": "application/json" }, partial);
      expect(mcp.status).toBe(503);
      expect(errorInfo(JSON.parse(mcp.body))).toMatchObject({ reason: "INTAKE_FULL" });

      // gRPC is metered the same, on its fast path (unary) and through connect-node (streams).
      for (const path of ["/dev.cognizant_ai.neuro_san.api.grpc.concierge.ConciergeService/List", "/dev.cognizant_ai.neuro_san.api.grpc.agent.AgentService/StreamingChat"]) {
        const frame = envelope(0, Buffer.alloc(100 * 1024), 1_000_000);
        const session = http2.connect(roomy.url);
        session.on("error", () => {});
        try {
          const stream = session.request({ ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers" }, { endStream: false });
          stream.on("error", () => {});
          stream.write(frame);
          const answer: http2.IncomingHttpHeaders = {};
          stream.once("response", (received) => Object.assign(answer, received));
          stream.once("trailers", (received) => Object.assign(answer, received));
          stream.resume();
          await within(10_000, new Promise((resolve) => stream.once("close", resolve)), `${path} refused`);
          expect(answer["grpc-status"], path).toBe("14");
        } finally {
          session.destroy();
        }
      }

      // Authenticated bodies are not counted against it.
      const submitted = await fetch(`${roomy.url}/api/agent/v1/operations`, {
        method: "POST",
        headers: { authorization: `Bearer ${alice}`, "content-type": "application/json" },
        body: JSON.stringify({ idempotency_key: "budget", operation: "http.request", target: { credential: "nowhere", path: "/x" }, reason: "test", arguments: { note: "a".repeat(200 * 1024) } }),
      });
      expect(submitted.status).not.toBe(503);

      for (const holder of holders) holder.socket.destroy();
      await Promise.all(holders.map((holder) => holder.closed));
      // Once the holders are gone, an unauthenticated chat body of the same size is read again.
      await until(async () => {
        const response = await fetch(`${roomy.url}/api/v1/greeter/function`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ pad: "a".repeat(200 * 1024) }) });
        return response.status !== 503;
      }, "the budget is given back");
    });
  });

  describe("client input never gets a 500", () => {
    it("a Host header that is no URL authority is no 500 on REST, Connect (unary, GET, streams) or MCP", async () => {
      const requests = [
        ["POST", "/api/v1/greeter/function", "application/json", "{}"],
        ["GET", "/api/v1/list", "", ""],
        ["POST", "/dev.cognizant_ai.neuro_san.api.grpc.agent.AgentService/Function", "application/json", '{"agent_name":"greeter"}'],
        ["GET", "/dev.cognizant_ai.neuro_san.api.grpc.concierge.ConciergeService/List?encoding=json&message=%7B%7D", "", ""],
        ["POST", "/dev.cognizant_ai.neuro_san.api.grpc.concierge.ConciergeService/List", "application/connect+json", "\0\0\0\0\x02{}"],
        ["POST", "/mcp", "application/json", '{"jsonrpc":"2.0","id":1,"method":"tools/list"}'],
      ] as const;
      for (const host of ["[", "a b", "x:99999", "evil/x?"]) {
        for (const [method, path, type, body] of requests) {
          const connection = rawConnection(server.port);
          const headers = [`host: ${host}`, `authorization: Bearer ${alice}`, "accept: application/json, text/event-stream", "connection: close", `content-length: ${Buffer.byteLength(body, "latin1")}`];
          if (type) headers.push(`content-type: ${type}`);
          connection.socket.write(`${method} ${path} HTTP/1.1\r\n${headers.join("\r\n")}\r\n\r\n${body}`);
          const answer = await within(10_000, connection.answer(), `${method} ${path} with Host ${host}`);
          expect(answer.status, `${method} ${path} with Host ${host}: ${answer.body}`).toBeLessThan(500);
        }
      }
    });

    it("a request target that is no path is 404, not 500", async () => {
      for (const target of ["//[", "http://[/x", "*"]) {
        const connection = rawConnection(server.port);
        connection.socket.write(`GET ${target} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n`);
        const answer = await within(10_000, connection.answer(), target);
        expect(answer.status, target).toBeGreaterThanOrEqual(400);
        expect(answer.status, target).toBeLessThan(500);
      }
    });

    it("a body over the size limit is 413 REQUEST_TOO_LARGE with category rejected", async () => {
      const answer = await answeredBeforeBody(server.port, "POST", "/api/v1/greeter/streaming_chat", { "content-length": String(5 * 1024 * 1024) });
      expect(answer.status).toBe(413);
      expect(errorInfo(JSON.parse(answer.body))).toMatchObject({ reason: "REQUEST_TOO_LARGE", metadata: { category: "rejected" } });
    });

    it("a Connect stream's message declared over the size limit ends with REQUEST_TOO_LARGE, category rejected, before it is read", async () => {
      const response = await fetch(`${server.url}/dev.cognizant_ai.neuro_san.api.grpc.agent.AgentService/StreamingChat`, {
        method: "POST",
        headers: { "content-type": "application/connect+json", "connect-protocol-version": "1" },
        body: envelope(0, "{}", 5 * 1024 * 1024),
      });
      const bytes = Buffer.from(await response.arrayBuffer());
      expect(bytes[0]).toBe(2); // the end of the stream, and its only message
      const { error } = JSON.parse(bytes.subarray(5).toString("utf8")) as { error: { code: string; details: { type: string; debug: unknown }[] } };
      expect(error.code).toBe("resource_exhausted");
      const info = error.details.find((detail) => detail.type === "google.rpc.ErrorInfo")?.debug;
      expect(info).toMatchObject({ reason: "REQUEST_TOO_LARGE", metadata: { category: "rejected" } });
    });
  });
});

