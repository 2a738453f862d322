import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fixtureEnv } from "../e2e/expectations.js";
import { TestCa } from "../support/certificates.js";
import { alice, roomyAdmission, writeFiles } from "../support/operations.js";
import { ScriptedChats } from "../support/scripted-chat.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { runAxon } from "./run-axon.js";

type Json = Record<string, any>;

describe("axon against a TLS server", () => {
  const ca = TestCa.create("cli-ca");
  const certificate = ca.issue("cli-server", "localhost", ["DNS:localhost", "IP:127.0.0.1"]);
  let server: TestServer;
  let url: string;

  beforeAll(async () => {
    server = await startTestServer({
      env: { ...fixtureEnv, ...writeFiles("http://127.0.0.1:9", roomyAdmission), AXON_TLS_CERT_FILE: certificate.certFile, AXON_TLS_KEY_FILE: certificate.keyFile },
      chats: new ScriptedChats(),
    });
    url = `https://127.0.0.1:${server.port}`;
  });
  afterAll(async () => {
    await server?.close();
  });

  it("trusts a private CA given with --ca-file, over REST and over gRPC", async () => {
    const list = await runAxon(["--url", url, "--ca-file", ca.certFile, "--json", "list"], {});
    expect(list.status, list.stderr).toBe(0);
    expect((JSON.parse(list.stdout) as Json).agents.map((agent: Json) => agent.agent_name)).toEqual(["greeter", "relay"]);

    const chat = await runAxon(["--url", url, "--json", "chat", "greeter", "--protocol", "grpc", "-m", "hi"], { AXON_CA_FILE: ca.certFile });
    expect(chat.status, chat.stderr).toBe(0);
    expect(chat.stdout).toContain("echo hi");

    const operations = await runAxon(["--url", url, "--ca-file", ca.certFile, "--token", alice, "--json", "op", "list"], {});
    expect(operations.status, operations.stderr).toBe(0);
  });

  it("refuses a server its CA does not vouch for, and a CA file it cannot read", async () => {
    const untrusted = await runAxon(["--url", url, "list"], {});
    expect(untrusted.status).not.toBe(0);
    expect(untrusted.stdout).toBe("");
    const missing = await runAxon(["--url", url, "--ca-file", "/nonexistent/ca.pem", "list"], {});
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain("--ca-file");
  });
});
