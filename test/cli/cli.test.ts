import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadPrincipals } from "../../src/auth/principals.js";
import { alice, operator, roomyAdmission, secret, startUpstream, writeFiles } from "../support/operations.js";
import { ScriptedLlm } from "../support/scripted-llm/scripted-llm.js";
import { projectRoot, startTestServer, type TestServer } from "../support/server.js";
import { runAxon, type Run } from "./run-axon.js";

type Json = Record<string, any>;

let llm: ScriptedLlm;
let upstream: Awaited<ReturnType<typeof startUpstream>>;
let server: TestServer;

beforeAll(async () => {
  llm = await ScriptedLlm.start("openai");
  upstream = await startUpstream();
  // http.request to /grants may be granted ahead as a window; any other http.request needs an approval per execution.
  const policy = {
    rules: [
      { id: "chat", effect: "allow", operations: ["agent.chat"] },
      { id: "grants", effect: "request", operations: ["http.request"], targets: [{ path: "/grants" }], grant_policy: { mode: "window", default_minutes: 10, default_max_uses: 3 } },
      { id: "http", effect: "request", operations: ["http.request"], grant_policy: { mode: "execution" } },
    ],
  };
  server = await startTestServer({ env: { ...llm.env, ...writeFiles(upstream.url, roomyAdmission, policy) } });
});
afterAll(async () => {
  await server.close();
  upstream.close();
  await llm.close();
});

/** The real `axon` binary against this file's server, as client alice and the operator. */
function axon(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return runAxon(args, { AXON_URL: server.url, AXON_TOKEN: alice, AXON_OPERATOR_TOKEN: operator, ...env });
}

/** A command that must succeed with `--json`: its one JSON document, parsed. */
async function axonJson(args: string[], env?: Record<string, string>): Promise<any> {
  const run = await axon(["--json", ...args], env);
  if (run.status !== 0 || run.stderr !== "") throw new Error(`axon ${args.join(" ")} exited ${run.status}: ${run.stderr}`);
  return JSON.parse(run.stdout);
}

describe("axon", () => {
  it("lists the public networks as one JSON document", async () => {
    const listing = (await axonJson(["list"])) as Json;
    expect(listing.agents.map((agent: Json) => agent.agent_name)).toContain("hello_world");
  });

  it("chats two turns, carrying the chat_context of the first answer into the second", async () => {
    const finals = (await axonJson(["chat", "hello_world", "-m", "my name is Ada", "-m", "what is my name?"])) as Json[];
    expect(finals).toHaveLength(2);
    expect(finals.every((final) => final.type === "AGENT_FRAMEWORK" && typeof final.text === "string")).toBe(true);
    const history = JSON.stringify(finals[1]!.chat_context);
    expect(history).toContain("my name is Ada");
    expect(history).toContain("what is my name?");
    expect(JSON.stringify(finals[0]!.chat_context)).not.toContain("what is my name?");
  });

  it("takes an http.request through operator approval to success", async () => {
    const submitted = (await axonJson([
      "op", "submit", "--operation", "http.request", "--target", JSON.stringify({ credential: "upstream", path: "/things" }),
      "--arguments", JSON.stringify({ method: "GET" }), "--reason", "read the things",
    ])) as Json;
    expect(submitted).toMatchObject({ state: "pending", operation: "http.request", idempotency_key: expect.stringMatching(/^cli-/) });

    const pending = (await axonJson(["operator", "list"])) as Json;
    expect(pending.requests.map((request: Json) => request.id)).toContain(submitted.approval_id);

    const approved = (await axonJson(["operator", "approve", submitted.approval_id, "--reason", "fine"])) as Json;
    // An execution grant is used at once: by the time the answer is read it may already be consumed.
    expect(approved).toMatchObject({ id: submitted.approval_id, status: expect.stringMatching(/^(active|consumed)$/) });

    const done = (await axonJson(["op", "wait", submitted.id, "--timeout", "20"])) as Json;
    expect(done).toMatchObject({ id: submitted.id, state: "succeeded" });
    expect(upstream.received.map((request) => request.url)).toContain("/things");
  });

  it("exits 1 when the awaited operation ends denied", async () => {
    const submitted = (await axonJson(["op", "submit", "--operation", "http.request", "--target", JSON.stringify({ credential: "upstream", path: "/x" }), "--arguments", '{"method": "GET"}', "--reason", "try"])) as Json;
    await axonJson(["operator", "deny", submitted.approval_id]);
    const run = await axon(["op", "wait", submitted.id]);
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/^axon: op_\S+ ended denied/);
  });

  it("reports an unknown network in one line that names it, with exit status 3", async () => {
    for (const args of [["connectivity", "no_such_network"], ["chat", "no_such_network", "-m", "hi", "--protocol", "grpc"]]) {
      const run = await axon(args);
      expect(run.status).toBe(3);
      expect(run.stdout).toBe("");
      expect(run.stderr).toBe("axon: no_such_network: agent network not found (AGENT_NOT_FOUND, NOT_FOUND)\n");
    }
  });

  it("reports a wrong token in one line that says its code once, with exit status 4", async () => {
    const run = await axon(["op", "list"], { AXON_TOKEN: secret() });
    expect(run.status).toBe(4);
    expect(run.stderr).toBe("axon: a valid client bearer secret is required (UNAUTHENTICATED)\n");
  });

  it("asks for an operator secret when none is given", async () => {
    const run = await axon(["operator", "list"], { AXON_OPERATOR_TOKEN: "" });
    expect(run.status).toBe(4);
    expect(run.stderr).toBe("axon: an operator secret is required: pass --operator-token or AXON_OPERATOR_TOKEN\n");
  });

  it("says when an operation to cancel has already ended, with exit status 5, and changes nothing", async () => {
    const submitted = (await axonJson(["op", "submit", "--operation", "http.request", "--target", JSON.stringify({ credential: "upstream", path: "/ended" }), "--arguments", '{"method": "GET"}', "--reason", "soon denied"])) as Json;
    await axonJson(["operator", "deny", submitted.approval_id]);
    const run = await axon(["op", "cancel", submitted.id]);
    expect(run.status).toBe(5);
    expect(run.stderr).toBe(`axon: ${submitted.id} was not canceled: it had already ended denied\n`);
    expect((await axonJson(["op", "get", submitted.id])).state).toBe("denied");
  });

  it("adds a client whose secret the server accepts, and refuses the same name twice", async () => {
    const file = path.join(mkdtempSync(path.join(os.tmpdir(), "axon-cli-")), "clients");
    const added = (await axonJson(["clients", "add", "carol", "--file", file])) as Json;
    expect(added).toMatchObject({ name: "carol", file });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const { principals } = await loadPrincipals(file, "client");
    expect(principals.authenticate(added.secret)).toEqual({ name: "carol", kind: "client" });

    const again = await axon(["clients", "add", "carol", "--file", file]);
    expect(again.status).toBe(5);
    expect(again.stderr).toContain("already has a client named carol");
  });

  it("prints a network's connectivity as a tree without --json", async () => {
    const tree = await axon(["connectivity", "hello_world"]);
    expect(tree.stdout).toBe("Greeter (llm_agent)\n└─ Phrasebook (llm_agent)\n");
  });

  it("chats over gRPC, keeping the thinking of --maximal off stdout under --json", async () => {
    const run = await axon(["--json", "chat", "hello_world", "--protocol", "grpc", "--maximal", "--sly-data", '{"user": "ada"}', "-m", "Welsh"]);
    expect(run.status).toBe(0);
    const finals = JSON.parse(run.stdout) as Json[];
    expect(finals).toEqual([expect.objectContaining({ type: "AGENT_FRAMEWORK", chat_context: expect.any(Object) })]);
    expect(run.stderr).toContain("[Greeter/Phrasebook] AI: ");
  });

  it("chats interactively from stdin until the input ends", async () => {
    const child = spawn(process.execPath, ["bin/axon.mjs", "chat", "hello_world", "--protocol", "connect"], {
      cwd: projectRoot,
      env: { PATH: process.env.PATH ?? "", AXON_URL: server.url },
    });
    let stdout = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stdin.end("Welsh\n\nBreton\n");
    const [code] = (await once(child, "exit")) as [number];
    expect(code).toBe(0);
    expect(stdout.trim().split("\n")).toHaveLength(2);
  });

  it("requests a window grant ahead of use and lists it", async () => {
    const target = JSON.stringify({ credential: "upstream", path: "/grants" });
    const grant = (await axonJson(["grant", "request", "--operation", "http.request", "--target", target, "--reason", "read ahead", "--id", "cli-grant-1"])) as Json;
    expect(grant).toMatchObject({ status: "pending", operation: "http.request", client_request_id: "cli-grant-1" });
    const listed = (await axonJson(["grant", "list"])) as Json;
    expect(listed.grants.map((each: Json) => each.id)).toContain(grant.id);
  });

  it("cancels a pending operation, and a stale approval is then a conflict", async () => {
    const submitted = (await axonJson(["op", "submit", "--operation", "http.request", "--target", JSON.stringify({ credential: "upstream", path: "/c" }), "--arguments", '{"method": "GET"}', "--reason", "maybe", "--key", "cli-cancel-1"])) as Json;
    expect(await axonJson(["op", "cancel", submitted.id])).toMatchObject({ id: submitted.id, state: "canceled" });
    const approve = await axon(["operator", "approve", submitted.approval_id]);
    expect(approve.status).toBe(5);
    expect(approve.stderr).toMatch(/^axon: .+ \(\w+, ABORTED\)\n$/);
  });

  it("watches the operator feed, one JSON line per event, until Ctrl-C", async () => {
    const child = spawn(process.execPath, ["bin/axon.mjs", "--json", "operator", "watch", "--after", "0"], {
      cwd: projectRoot,
      env: { PATH: process.env.PATH ?? "", AXON_URL: server.url, AXON_OPERATOR_TOKEN: operator },
    });
    let stdout = "";
    const firstLine = new Promise<void>((resolve) =>
      child.stdout.on("data", (chunk: Buffer) => {
        stdout += chunk.toString();
        if (stdout.includes("\n")) resolve();
      }),
    );
    // --after 0 replays the feed from its beginning, which earlier tests filled.
    await firstLine;
    child.kill("SIGINT");
    const [code] = (await once(child, "exit")) as [number];
    expect(code).toBe(0);
    const events = stdout.trim().split("\n").map((line) => JSON.parse(line) as Json);
    expect(events[0]).toMatchObject({ seq: expect.anything(), kind: expect.any(String) });
  });

  it("rejects bad usage with exit status 2 before calling anyone", async () => {
    const run = await axon(["op", "submit", "--operation", "agent.chat", "--target", "[1]", "--reason", "r"]);
    expect(run.status).toBe(2);
    expect(run.stderr).toContain("--target must be a JSON object");
  });

  it("delegates test to the network-test runner", async () => {
    const run = await axon(["test", "no-such-case.hocon"]);
    expect(run.status).toBe(2);
  });
});
