import Database from "better-sqlite3";
import { createHmac, randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGitBroker, type GitBroker } from "../support/git-broker.js";
import { startGitHost, type ScriptedGitHost } from "../support/git-host.js";
import type { GitRun } from "../support/git.js";
import { startScriptedGitHub, type ScriptedGitHub } from "../support/scripted-github.js";
import { until } from "../support/wait.js";

const webhookSecret = randomBytes(20).toString("hex");

describe("a GitHub App as the host's credential: installation tokens per repository, dropped on the webhook's word", () => {
  let github: ScriptedGitHub;
  let host: ScriptedGitHost;
  let broker: GitBroker;
  const runs: GitRun[] = [];

  beforeAll(async () => {
    github = await startScriptedGitHub({ installations: { 77: ["acme/widgets"] } });
    host = await startGitHost();
    github.onMint = (token) => host.acceptToken(token);
    broker = await startGitBroker({
      host,
      name: "github",
      policy: { rules: [{ id: "alice", effect: "allow", clients: ["alice"], operations: ["git.*"] }] },
      env: { GITHUB_WEBHOOK_SECRET: webhookSecret },
      hostsFile: (hostUrl, dir) => {
        writeFileSync(path.join(dir, "app.pem"), github.privateKeyPem, { mode: 0o600 });
        return `github {\n  base_url: "${hostUrl}"\n  github_app { app_id: ${github.appId}, private_key_file: "app.pem", api_url: "${github.url}" }\n  webhook_secret_env: "GITHUB_WEBHOOK_SECRET"\n}\n`;
      },
    });
    const seed = await broker.agent.repository("seed");
    await host.createRepository("acme/widgets.git", seed);
    await host.createRepository("acme/private.git", seed);
  });
  afterAll(async () => {
    await broker?.close();
    await host?.close();
    await github?.close();
  });

  const git = async (args: string[], cwd = broker.agent.home) => {
    const run = await broker.agent.run(args, { cwd });
    runs.push(run);
    return run;
  };
  const deliver = (event: string, body: unknown, secret = webhookSecret) => {
    const payload = JSON.stringify(body);
    return fetch(`${broker.axon.url}/webhooks/github`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-github-event": event,
        "x-github-delivery": randomBytes(8).toString("hex"),
        "x-hub-signature-256": `sha256=${createHmac("sha256", secret).update(payload).digest("hex")}`,
      },
      body: payload,
    });
  };

  it("clones with a token narrowed to the repository and to reading, and pushes with one that may write", async () => {
    const tree = path.join(broker.agent.home, "widgets");
    expect((await git(["clone", "-q", broker.remote("acme/widgets.git"), tree])).code).toBe(0);
    expect(github.minted).toEqual([{ installation: 77, token: expect.stringMatching(/^ghs_/), repositories: ["widgets"], permissions: { contents: "read" } }]);
    await broker.agent.commit(tree, "second", { "second.txt": "2\n" });
    const push = await git(["push", "-q", "origin", "main"], tree);
    expect(push.code, push.stderr).toBe(0);
    expect(github.minted.map((token) => token.permissions.contents)).toEqual(["read", "write"]);
    expect(github.rejectedJwts).toBe(0);
  });

  it("reuses a token until shortly before it expires", async () => {
    const minted = github.minted.length;
    expect((await git(["fetch", "-q", "origin"], path.join(broker.agent.home, "widgets"))).code).toBe(0);
    expect(github.minted.length).toBe(minted);
  });

  it("fails a repository the App is not installed on, saying so", async () => {
    const run = await git(["clone", "-q", broker.remote("acme/private.git"), path.join(broker.agent.home, "private")]);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain("remote: axon: the GitHub App is not installed on acme/private");
  });

  it("refuses a webhook delivery whose signature does not match, and changes nothing", async () => {
    const minted = github.minted.length;
    const forged = await deliver("installation", { action: "deleted", installation: { id: 77 } }, "not-the-secret");
    expect(forged.status).toBe(401);
    expect((await git(["fetch", "-q", "origin"], path.join(broker.agent.home, "widgets"))).code).toBe(0);
    expect(github.minted.length).toBe(minted);
  });

  it("drops an installation's tokens when a verified delivery says it was suspended, and mints afresh", async () => {
    const minted = github.minted.length;
    const delivered = await deliver("installation", { action: "suspend", installation: { id: 77 } });
    expect(delivered.status).toBe(200);
    expect((await git(["fetch", "-q", "origin"], path.join(broker.agent.home, "widgets"))).code).toBe(0);
    expect(github.minted.length).toBe(minted + 1);
    const audited = await until(() => {
      const lines = broker.axon.logs.filter((line) => line.action === "github.webhook");
      return lines.length >= 2 ? lines : undefined;
    }, "two audited deliveries");
    expect(audited.map((line) => line.outcome)).toEqual(["bad_signature", "accepted"]);
    expect(audited[1]).toMatchObject({ category: "audit", event: "installation", github_action: "suspend", installation: 77, tokens_dropped: 2, hosts: ["github"] });
    // The same records are in the audit table, beside the pushes' and fetches'.
    const rows = await until(() => {
      const database = new Database(path.join(broker.dataDir, "axon.db"), { readonly: true });
      try {
        const found = database.prepare("SELECT actor, category, detail FROM AuditRecord WHERE action = 'github.webhook' ORDER BY id").all() as { actor: string; category: string | null; detail: string }[];
        return found.length >= 2 ? found : undefined;
      } finally {
        database.close();
      }
    }, "the deliveries' audit records");
    expect(rows.map((row) => [row.actor, row.category, (JSON.parse(row.detail) as { outcome: string }).outcome])).toEqual([
      ["github", "rejected", "bad_signature"],
      ["github", null, "accepted"],
    ]);
  });

  it("never shows an installation token or the webhook secret to Git, in the logs or in the database", () => {
    const seen = runs.map((run) => run.stdout + run.stderr).join("\n") + broker.everything();
    for (const { token } of github.minted) expect(seen).not.toContain(token);
    expect(seen).not.toContain(webhookSecret);
    expect(seen).not.toContain("PRIVATE KEY");
  });
});
