import { execFile } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import http2 from "node:http2";
import https from "node:https";
import net from "node:net";
import tls from "node:tls";
import { promisify } from "node:util";
import * as grpc from "@grpc/grpc-js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConciergeService } from "../../src/gen/neuro_san/api/grpc/concierge_pb.js";
import { ConciergeServiceClient, type ConciergeResponse } from "../gen/neuro_san/api/grpc/concierge.js";
import { fixtureEnv } from "../e2e/expectations.js";
import { fetchTrusting, replaceFile, TestCa } from "../support/certificates.js";
import { alice, roomyAdmission, writeFiles } from "../support/operations.js";
import { ScriptedChats } from "../support/scripted-chat.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { until, within } from "../support/wait.js";

type Json = Record<string, any>;
const run = promisify(execFile);

// One CA and its certificates for the whole file: openssl runs a handful of times, not per test.
const ca = TestCa.create("ca");
const serverCert = ca.issue("server", "localhost", ["DNS:localhost", "IP:127.0.0.1"]);
const renewedCert = ca.issue("renewed", "localhost", ["DNS:localhost", "IP:127.0.0.1"]);
const aliceCert = ca.issue("alice", "alice");
const sanOnlyCert = ca.issue("bob-by-san", "some-host", ["DNS:bob"]);
const strangerCa = TestCa.create("stranger");
const strangerCert = strangerCa.issue("mallory", "alice");

const read = (file: string) => readFileSync(file);

/** The certificate a fresh connection is served, by fingerprint. */
function servedFingerprint(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: "127.0.0.1", port, ca: ca.pem, servername: "localhost" }, () => {
      resolve(socket.getPeerCertificate().fingerprint256);
      socket.end();
    });
    socket.on("error", reject);
  });
}

function fingerprintOf(pem: Buffer): string {
  return new X509Certificate(pem).fingerprint256;
}

describe("TLS on the one port", () => {
  let server: TestServer;
  let url: string;
  let certFile: string;
  let keyFile: string;

  beforeAll(async () => {
    // The server's files are copies, so that the reload test can replace them in place.
    const files = writeFiles("http://127.0.0.1:9", roomyAdmission);
    certFile = `${files.AXON_CLIENTS_FILE}.cert.pem`;
    keyFile = `${files.AXON_CLIENTS_FILE}.key.pem`;
    replaceFile(certFile, serverCert.certFile);
    replaceFile(keyFile, serverCert.keyFile);
    server = await startTestServer({
      env: { ...fixtureEnv, ...files, AXON_TLS_CERT_FILE: certFile, AXON_TLS_KEY_FILE: keyFile },
      chats: new ScriptedChats(),
    });
    url = `https://127.0.0.1:${server.port}`;
  });
  afterAll(async () => {
    await server?.close();
  });

  it("grpc-js with SSL credentials lists the networks", async () => {
    const client = new ConciergeServiceClient(`127.0.0.1:${server.port}`, grpc.credentials.createSsl(ca.pem));
    try {
      const response = await new Promise<ConciergeResponse>((resolve, reject) => client.list({}, (error, answer) => (error ? reject(error) : resolve(answer))));
      expect(response.agents.map((agent) => agent.agent_name)).toEqual(["greeter", "relay"]);
    } finally {
      client.close();
    }
  });

  it("Python grpcio's secure_channel lists the networks", async () => {
    const script = [
      "import grpc, sys",
      "creds = grpc.ssl_channel_credentials(root_certificates=open(sys.argv[1], 'rb').read())",
      "with grpc.secure_channel(sys.argv[2], creds) as channel:",
      `    answer = channel.unary_unary('/${ConciergeService.typeName}/List')(b'', timeout=10)`,
      "    print(answer.hex())",
    ].join("\n");
    const { stdout } = await run("/usr/bin/python3", ["-c", script, ca.certFile, `127.0.0.1:${server.port}`]);
    const text = Buffer.from(stdout.trim(), "hex").toString("latin1");
    expect(text).toContain("greeter");
    expect(text).toContain("relay");
  });

  it("curl speaks HTTP/1.1 and h2 to REST, as ALPN picks", async () => {
    for (const [flag, version] of [["--http1.1", "1.1"], ["--http2", "2"]] as const) {
      const { stdout } = await run("curl", ["-sS", flag, "--cacert", ca.certFile, "-w", "\n%{http_version}", `${url}/api/v1/list`]);
      const [body, negotiated] = stdout.split("\n");
      expect(negotiated).toBe(version);
      expect((JSON.parse(body!) as Json).agents.map((agent: Json) => agent.agent_name)).toEqual(["greeter", "relay"]);
    }
  });

  it("an MCP SDK client works over https", async () => {
    const client = new Client({ name: "axon-test", version: "1" });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { fetch: fetchTrusting(ca.pem), requestInit: { headers: { authorization: `Bearer ${alice}` } } }),
    );
    try {
      expect((await client.listTools()).tools.map((tool) => tool.name)).toContain("greeter");
    } finally {
      await client.close();
    }
  });

  it("refuses cleartext HTTP/1.1 and h2c, and TLS older than 1.2, within milliseconds", async () => {
    const cleartext = (bytes: string) =>
      new Promise<string>((resolve) => {
        let answer = "";
        const socket = net.connect(server.port, "127.0.0.1", () => socket.write(bytes));
        socket.on("data", (chunk) => (answer += chunk.toString("latin1")));
        socket.on("close", () => resolve(answer));
        socket.on("error", () => undefined);
      });
    for (const bytes of ["GET /api/v1/list HTTP/1.1\r\nhost: x\r\n\r\n", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"]) {
      const answer = await within(2_000, cleartext(bytes), "the refusal of cleartext");
      expect(answer).not.toContain("HTTP/1.1 200");
      expect(answer).not.toContain("greeter");
    }
    const old = await new Promise<string>((resolve) => {
      const socket = tls.connect({ host: "127.0.0.1", port: server.port, ca: ca.pem, servername: "localhost", minVersion: "TLSv1", maxVersion: "TLSv1.1" }, () => resolve("connected"));
      socket.on("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? "error"));
    });
    expect(old).not.toBe("connected");
  });

  it("answers a wrong token before the body over TLS too, and closes the connection", async () => {
    const answer = await within(
      5_000,
      new Promise<{ status: number; connection: string | undefined }>((resolve, reject) => {
        const request = https.request(
          `${url}/api/agent/v1/operations`,
          { method: "POST", ca: ca.pem, servername: "localhost", headers: { authorization: "Bearer wrong", "content-type": "application/json", "content-length": 1024 * 1024 } },
          (response) => {
            response.resume();
            resolve({ status: response.statusCode!, connection: response.headers.connection });
          },
        );
        request.on("error", reject);
        // Headers only: the declared megabyte never comes.
        request.flushHeaders();
      }),
      "the 401 before the body",
    );
    expect(answer).toEqual({ status: 401, connection: "close" });
  });

  it("a replaced certificate reaches new connections within seconds, and open connections go on", async () => {
    const session = http2.connect(url, { ca: ca.pem, servername: "localhost" });
    const get = (path: string) =>
      new Promise<number>((resolve, reject) => {
        const stream = session.request({ ":path": path });
        stream.on("response", (headers) => resolve(Number(headers[":status"])));
        stream.on("error", reject);
        stream.resume();
      });
    try {
      expect(await get("/api/v1/list")).toBe(200);
      expect(await servedFingerprint(server.port)).toBe(fingerprintOf(read(serverCert.certFile)));

      replaceFile(certFile, renewedCert.certFile);
      replaceFile(keyFile, renewedCert.keyFile);
      const renewed = fingerprintOf(read(renewedCert.certFile));
      await until(async () => (await servedFingerprint(server.port)) === renewed, "the renewed certificate on a new connection", 10_000);

      // The connection made before the renewal still serves calls.
      expect(await get("/api/v1/list")).toBe(200);
    } finally {
      session.close();
    }
  });
});

describe("mutual TLS", () => {
  let server: TestServer;
  let url: string;

  beforeAll(async () => {
    const files = writeFiles("http://127.0.0.1:9", roomyAdmission);
    // bob is a client by name only here (his secret is unknown to the test): his certificate names him in a SAN.
    writeFileSync(files.AXON_CLIENTS_FILE, `alice = ${alice}\nbob = ${"b".repeat(43)}\n`);
    server = await startTestServer({
      env: {
        ...fixtureEnv,
        ...files,
        AXON_TLS_CERT_FILE: serverCert.certFile,
        AXON_TLS_KEY_FILE: serverCert.keyFile,
        AXON_TLS_CLIENT_CA_FILE: ca.certFile,
      },
      chats: new ScriptedChats(),
    });
    url = `https://127.0.0.1:${server.port}`;
  });
  afterAll(async () => {
    await server?.close();
  });

  const withCertificate = async (files: { certFile: string; keyFile: string }) => fetchTrusting(ca.pem, { cert: read(files.certFile), key: read(files.keyFile) });

  it("a client certificate whose CN or SAN DNS name is a client authenticates it without a bearer", async () => {
    for (const files of [aliceCert, sanOnlyCert]) {
      const response = await (await withCertificate(files))(`${url}/api/agent/v1/operations`);
      expect(response.status).toBe(200);
    }
  });

  it("the certificate names the client over HTTP/2 as well", async () => {
    const session = http2.connect(url, { ca: ca.pem, servername: "localhost", cert: read(aliceCert.certFile), key: read(aliceCert.keyFile) });
    try {
      const status = await new Promise<number>((resolve, reject) => {
        const stream = session.request({ ":path": "/api/agent/v1/operations" });
        stream.on("response", (headers) => resolve(Number(headers[":status"])));
        stream.on("error", reject);
        stream.resume();
      });
      expect(status).toBe(200);
    } finally {
      session.close();
    }
  });

  it("a certificate that names no client is only a connection: the agent surface still wants a bearer", async () => {
    const nobody = ca.issue("nobody", "nobody");
    const fetchAsNobody = await withCertificate(nobody);
    expect((await fetchAsNobody(`${url}/api/agent/v1/operations`)).status).toBe(401);
    expect((await fetchAsNobody(`${url}/api/agent/v1/operations`, { headers: { authorization: `Bearer ${alice}` } })).status).toBe(200);
    expect((await fetchAsNobody(`${url}/api/v1/list`)).status).toBe(200);
  });

  it("refuses in the handshake a certificate from another CA, and no certificate at all", async () => {
    for (const client of [{ cert: read(strangerCert.certFile), key: read(strangerCert.keyFile) }, {}]) {
      const outcome = await within(
        5_000,
        new Promise<string>((resolve) => {
          const request = http2.connect(url, { ca: ca.pem, servername: "localhost", ...client });
          request.on("connect", () => {
            const stream = request.request({ ":path": "/api/v1/list" });
            stream.on("response", () => resolve("answered"));
            stream.on("error", () => resolve("refused"));
          });
          request.on("error", () => resolve("refused"));
          request.on("close", () => resolve("refused"));
        }),
        "the handshake's refusal",
      );
      expect(outcome).toBe("refused");
    }
  });
});
