import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGitBroker, type GitBroker } from "../support/git-broker.js";
import { gitSandbox, type GitSandbox } from "../support/git.js";
import { alice } from "../support/operations.js";
import { runAxon } from "./run-axon.js";

describe("axon git install, status and uninstall: the agent's side is plain Git", () => {
  let broker: GitBroker;
  let agent: GitSandbox;
  let secretFile: string;
  let axon: (args: string[], input?: string) => ReturnType<typeof runAxon>;

  beforeAll(async () => {
    broker = await startGitBroker({ policy: { rules: [{ id: "alice", effect: "allow", clients: ["alice"], operations: ["git.*"] }] } });
    await broker.host.createRepository("acme/widgets.git", await broker.agent.repository("seed"));
    // A fresh agent, with a credential store configured for everything: it must never get Axon's secret.
    agent = gitSandbox();
    await agent.git(["config", "--global", "credential.helper", "store"]);
    secretFile = path.join(agent.home, "axon-secret");
    writeFileSync(secretFile, `${alice}\n`, { mode: 0o600 });
    axon = (args, input) => runAxon(["--url", broker.axon.url, ...args], { HOME: agent.home, GIT_CONFIG_NOSYSTEM: "1" }, input === undefined ? {} : { input });
  });
  afterAll(() => broker?.close());

  it("installs the rewrite and a helper scoped to Axon, after which a plain clone goes through Axon", async () => {
    const installed = await axon(["git", "install", "--host", "scripted", "--rewrite", `${broker.host.url}/`, "--secret-file", secretFile]);
    expect(installed.status, installed.stderr).toBe(0);
    expect(installed.stdout).toContain(`${broker.host.url}/ -> ${broker.axon.url}/git/scripted/`);
    expect(await agent.git(["config", "--global", "--get-all", `url.${broker.axon.url}/git/scripted/.insteadOf`])).toBe(`${broker.host.url}/`);
    const helperLines = async () => (await agent.run(["config", "--global", "--get-all", `credential.${broker.axon.url}.helper`])).stdout.split("\n");
    const helpers = await helperLines();
    expect(helpers[0]).toBe("");
    expect(helpers[1]).toMatch(/git credential --secret-file/);
    // Installing again changes nothing.
    expect((await axon(["git", "install", "--host", "scripted", "--rewrite", `${broker.host.url}/`, "--secret-file", secretFile])).status).toBe(0);
    expect(await helperLines()).toEqual(helpers);

    const clone = await agent.run(["clone", "-q", `${broker.host.url}/acme/widgets.git`, path.join(agent.home, "widgets")]);
    expect(clone.code, clone.stderr).toBe(0);
    expect(existsSync(path.join(agent.home, ".git-credentials")) ? readFileSync(path.join(agent.home, ".git-credentials"), "utf8") : "").not.toContain(alice);
  });

  it("says what goes through Axon", async () => {
    const status = await axon(["git", "status", "--secret-file", secretFile]);
    expect(status.status, status.stderr).toBe(0);
    expect(status.stdout).toContain(`${broker.host.url}/ -> ${broker.axon.url}/git/scripted/`);
    expect(status.stdout).toContain(`credential helper for ${broker.axon.url}: installed`);
    expect(status.stdout).toContain(`client secret: from ${secretFile}`);
    const json = JSON.parse((await axon(["--json", "git", "status"])).stdout);
    expect(json).toMatchObject({ axon: broker.axon.url, credential_helper: true, secret: null });
  });

  it("answers Git's credential requests for Axon's origin only", async () => {
    const origin = new URL(broker.axon.url);
    const forAxon = await axon(["git", "credential", "get", "--secret-file", secretFile], `protocol=http\nhost=${origin.host}\n\n`);
    expect(forAxon.stdout).toBe(`username=axon\npassword=${alice}\n`);
    const elsewhere = await axon(["git", "credential", "get", "--secret-file", secretFile], "protocol=https\nhost=github.com\n\n");
    expect(elsewhere).toMatchObject({ status: 0, stdout: "" });
    const noSecret = await axon(["git", "credential", "get"], `protocol=http\nhost=${origin.host}\n\n`);
    expect(noSecret.status).not.toBe(0);
    expect(noSecret.stderr).toBe("axon: no client secret: set AXON_CLIENT_SECRET or pass --secret-file\n");
  });

  it("uninstalls both, after which Git no longer goes through Axon", async () => {
    const removed = await axon(["git", "uninstall"]);
    expect(removed.status, removed.stderr).toBe(0);
    expect(removed.stdout).toBe(`removed 1 rewrite and the credential helper for ${broker.axon.url}\n`);
    expect((await agent.run(["config", "--global", "--get-all", `credential.${broker.axon.url}.helper`])).code).toBe(1);
    const direct = await agent.run(["ls-remote", `${broker.host.url}/acme/widgets.git`]);
    expect(direct.code).not.toBe(0); // straight to the host, which wants a token the agent does not have
  });
});
