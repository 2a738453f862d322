import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ScriptedChats } from "../support/scripted-chat.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { fixtureEnv } from "../e2e/expectations.js";
import { H2Client, sendH1 } from "./wire.js";

// What HTTP itself asks of the answers no RPC produces: refusals sent before the body was read (RFC 9112 §9.6), 405
// with Allow and HEAD as GET (RFC 9110 §15.5.6, §9.3.2), on every path that can give them.
const list = "/dev.cognizant_ai.neuro_san.api.grpc.concierge.ConciergeService/List";

let server: TestServer;
let h2: H2Client;
beforeAll(async () => {
  server = await startTestServer({ env: fixtureEnv, chats: new ScriptedChats() });
  h2 = new H2Client(server.url);
});
afterAll(async () => {
  h2.close();
  await server.close();
});

/**
 * Sends a request that declares a 16 MB body, then all of it while the answer arrives, as a client that does not wait
 * for the answer would (its side stays open after the server's FIN); resolves with the answer's head once the
 * connection has closed, and with the error that closed it if one did (a reset: the server closed with bytes unread).
 */
function answerWhileSending(method: string, path: string, headers: Record<string, string> = {}): Promise<{ head: string; error: string | undefined }> {
  return new Promise((resolve) => {
    const socket = net.connect({ port: server.port, host: "127.0.0.1", allowHalfOpen: true });
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    const chunks = 256;
    const head = [`${method} ${path} HTTP/1.1`, "host: x", `content-length: ${chunk.byteLength * chunks}`, ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`), "", ""].join("\r\n");
    let received = "";
    let error: string | undefined;
    socket.on("data", (data) => (received += data.toString("latin1")));
    socket.on("error", (cause: NodeJS.ErrnoException) => (error = cause.code));
    socket.on("close", () => resolve({ head: received.slice(0, received.indexOf("\r\n\r\n")), error }));
    socket.write(head);
    let sent = 0;
    const pump = (): void => {
      while (sent < chunks && !socket.destroyed) {
        sent++;
        if (!socket.write(chunk)) return void socket.once("drain", pump);
      }
      if (!socket.destroyed) socket.end();
    };
    pump();
  });
}

describe("an answer sent before the request's body was read, over HTTP/1.1", () => {
  it.each([
    ["an unknown route", "POST", "/no/such/route", {}],
    ["REST's wrong method on a known path", "PATCH", "/api/v1/list", {}],
    ["gRPC-Web to an unknown method", "POST", "/no.such.Service/Method", { "content-type": "application/grpc-web+proto" }],
  ])("%s says Connection: close and closes only once the body is read", async (_name, method, path, headers) => {
    const { head, error } = await answerWhileSending(method, path, headers);
    expect(head).toMatch(/^HTTP\/1\.1 (404|405|200) /);
    expect(head.toLowerCase()).toContain("connection: close");
    expect(error).toBeUndefined();
  });
});

describe("405 and HEAD", () => {
  it("a REST route's wrong method is 405 with Allow, HEAD included where GET is", async () => {
    const response = await fetch(`${server.url}/api/v1/list`, { method: "DELETE" });
    expect(response.status).toBe(405);
    expect(response.headers.get("allow")).toBe("GET, HEAD");
  });

  it.each(["/api/v1/list", "/healthz"])("HEAD %s is answered as GET without the body", async (path) => {
    const [head, get] = [await fetch(`${server.url}${path}`, { method: "HEAD" }), await fetch(`${server.url}${path}`)];
    expect({ status: head.status, type: head.headers.get("content-type") }).toEqual({ status: get.status, type: get.headers.get("content-type") });
    expect(await head.text()).toBe("");
  });

  it.each([
    ["Connect with PUT", "PUT", { "content-type": "application/json" }],
    ["Connect with DELETE", "DELETE", { "content-type": "application/json" }],
    ["gRPC-Web with GET", "GET", { "content-type": "application/grpc-web+proto" }],
  ])("%s on an RPC is 405 with Allow", async (_name, method, headers) => {
    const response = await sendH1(server.url, { path: list, method, headers });
    expect(response.status).toBe(405);
    expect(response.headers.allow).toMatch(/POST/);
  });

  it("gRPC with GET on an RPC is 405 with Allow", async () => {
    const response = await h2.send({ path: list, method: "GET", headers: { "content-type": "application/grpc" } });
    expect(response.status).toBe(405);
    expect(response.headers.allow).toMatch(/POST/);
  });
});
