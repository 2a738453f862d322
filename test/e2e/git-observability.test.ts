import { randomBytes } from "node:crypto";
import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGitBroker, type GitBroker } from "../support/git-broker.js";
import { startGitHost, type ScriptedGitHost } from "../support/git-host.js";
import { OtlpReceiver } from "../support/otlp-receiver.js";
import { until } from "../support/wait.js";

type Json = Record<string, any>;

describe("every Git request is audited, counted and traced; public hosts and push limits", () => {
  let receiver: OtlpReceiver;
  let host: ScriptedGitHost;
  let broker: GitBroker;

  beforeAll(async () => {
    receiver = await OtlpReceiver.start();
    host = await startGitHost({ anonymousReads: true });
    broker = await startGitBroker({
      host,
      policy: { rules: [{ id: "alice", effect: "allow", clients: ["alice"], operations: ["git.*"] }] },
      env: { ...receiver.env(), OTEL_SERVICE_NAME: "axon-git", AXON_GIT_MAX_PUSH_BYTES: String(256 * 1024) },
      // The same host twice: with its token, and as a public mirror that is fetched from without one.
      hostsFile: (hostUrl) => `scripted { base_url: "${hostUrl}", token_env: "SCRIPTED_HOST_TOKEN" }\nmirror { base_url: "${hostUrl}", anonymous_fetch: true }\n`,
    });
    await broker.agent.git(["config", "--global", `url.${broker.axon.url}/git/mirror/.insteadOf`, "https://mirror.example/"]);
    await host.createRepository("acme/widgets.git", await broker.agent.repository("seed"));
  });
  afterAll(async () => {
    await broker?.close();
    await host?.close();
    await receiver?.close();
  });

  it("fetches from a public host with no credential, and refuses to push there", async () => {
    const seen = host.requests.length;
    const tree = path.join(broker.agent.home, "mirrored");
    const clone = await broker.agent.run(["clone", "-q", "https://mirror.example/acme/widgets.git", tree]);
    expect(clone.code, clone.stderr).toBe(0);
    expect(host.requests.slice(seen).every((request) => !request.authorized)).toBe(true);
    await broker.agent.commit(tree, "more", { "more.txt": "more\n" });
    const push = await broker.agent.run(["push", "origin", "main"], { cwd: tree });
    expect(push.code).not.toBe(0);
    expect(push.stderr).toContain("remote: axon: host mirror has no credential: only fetches of public repositories go through it");
  });

  it("refuses a push larger than AXON_GIT_MAX_PUSH_BYTES, and none of it lands", async () => {
    const tree = path.join(broker.agent.home, "large");
    await broker.agent.git(["clone", "-q", broker.remote("acme/widgets.git"), tree]);
    await broker.agent.commit(tree, "too large", { "large.bin": randomBytes(1024 * 1024) });
    const before = await host.refs("acme/widgets.git");
    const push = await broker.agent.run(["push", "origin", "main"], { cwd: tree });
    expect(push.code).not.toBe(0);
    expect(push.stderr).toMatch(/HTTP 413/);
    // A fast-forward is allowed as soon as its commands are read, and streams upstream as it arrives: cut off at the
    // limit, the host never sees a whole pack, and nothing lands.
    expect(await host.refs("acme/widgets.git")).toEqual(before);
    const refused = await until(() => broker.axon.logs.find((line) => line.msg === "git request" && line.code === "git_push_too_large"), "the refused push's log line");
    expect(refused).toMatchObject({ client_id: "alice", outcome: "failed" });
  });

  it("audits each decision in the database, counts requests and bytes, and traces each request", async () => {
    const tree = path.join(broker.agent.home, "observed");
    await broker.agent.git(["clone", "-q", broker.remote("acme/widgets.git"), tree]);
    await broker.agent.commit(tree, "observed", { "observed.txt": "seen\n" });
    expect((await broker.agent.run(["push", "-q", "origin", "main"], { cwd: tree })).code).toBe(0);

    const rows = await until(() => {
      const database = new Database(path.join(broker.dataDir, "axon.db"), { readonly: true });
      try {
        const found = database.prepare("SELECT action, actor, detail FROM AuditRecord WHERE action = 'native.succeeded'").all() as { action: string; actor: string; detail: string }[];
        return found.some((row) => row.detail.includes("git.push.fast_forward")) ? found : undefined;
      } finally {
        database.close();
      }
    }, "the push's audit record");
    const push = rows.map((row) => ({ ...row, detail: JSON.parse(row.detail) as Json })).find((row) => row.detail.operation === "git.push.fast_forward")!;
    expect(push).toMatchObject({
      action: "native.succeeded",
      actor: "alice",
      detail: { target: { kind: "repo", host: "scripted", owner: "acme", name: "widgets", refs: ["refs/heads/main"] }, rule: "alice", outcome: { upstream_status: 200, refs: [{ ref: "refs/heads/main", ok: true }] } },
    });
    expect(push.detail.outcome.body_sha256).toMatch(/^[0-9a-f]{64}$/);

    const metrics = await (await fetch(`${broker.axon.url}/metrics`)).text();
    expect(metrics).toMatch(/^axon_git_requests_total\{host="scripted",service="git-receive-pack",outcome="ok"\} [1-9]/m);
    expect(metrics).toMatch(/^axon_git_bytes_total\{host="scripted",service="git-upload-pack",direction="out"\} [1-9]/m);
    expect(metrics).toMatch(/^axon_git_request_duration_seconds_count\{host="scripted",service="info\/refs git-upload-pack"\} [1-9]/m);

    const span = await until(() => receiver.spans.find((candidate) => candidate.name === "git git-receive-pack" && candidate.attributes["axon.operation.name"] === "git.push.fast_forward" && candidate.attributes["axon.git.outcome"] === "ok"), "the push's span");
    expect(span).toMatchObject({
      service: "axon-git",
      kind: 2,
      attributes: { "enduser.id": "alice", "axon.git.host": "scripted", "axon.git.repository": "acme/widgets", "axon.operation.name": "git.push.fast_forward", "axon.git.decision": "rule:alice" },
    });
    expect(span.attributes["axon.git.updates"]).toEqual(["refs/heads/main git.push.fast_forward"]);
    expect(receiver.spans.some((candidate) => candidate.name === "git git-upload-pack")).toBe(true);
    expect(Buffer.concat(receiver.rawBodies).toString("latin1")).not.toContain(host.token);
    expect(broker.everything()).not.toContain(host.token);
  });
});
