import { generateKeyPairSync } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { GitHostsFileError, loadGitHosts } from "../../src/git/hosts.js";
import { UpstreamCredentials } from "../../src/git/upstream-credentials.js";
import { systemClock } from "../../src/operations/clock.js";

const dir = mkdtempSync(path.join(os.tmpdir(), "axon-git-hosts-"));
const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs1", format: "pem" }).toString();
const ec = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ type: "pkcs8", format: "pem" }).toString();
writeFileSync(path.join(dir, "app.pem"), rsa);
writeFileSync(path.join(dir, "ec.pem"), ec);
const hostsFile = (text: string) => {
  const file = path.join(dir, `hosts-${Math.random().toString(36).slice(2)}.hocon`);
  writeFileSync(file, text);
  return file;
};

describe("AXON_GIT_HOSTS_FILE", () => {
  it("reads token hosts, GitHub App hosts and public ones, and makes each credential only when a request needs it", async () => {
    const hosts = await loadGitHosts(
      hostsFile(`
        github { base_url: "https://github.com", github_app { app_id: 123, private_key_file: "app.pem" }, webhook_secret_env: "HOOK_SECRET" }
        gitea { base_url: "https://git.example.com/gitea/", token_env: "GITEA_TOKEN", username: "bot" }
        huggingface { base_url: "https://huggingface.co", token_env: "HF_TOKEN", scheme: bearer, anonymous_fetch: true }
        public { base_url: "http://mirror.example.com", anonymous_fetch: true }
      `),
      { GITEA_TOKEN: "gitea-secret" },
    );
    expect(hosts.get("github")).toMatchObject({ origin: "https://github.com", basePath: "", credential: { kind: "github_app", appId: "123", apiUrl: "https://api.github.com", webhookSecretEnv: "HOOK_SECRET" } });
    expect(hosts.get("gitea")).toMatchObject({ origin: "https://git.example.com", basePath: "/gitea", anonymousFetch: false });
    const credentials = new UpstreamCredentials(hosts, systemClock);
    expect(await credentials.authorization(hosts.get("gitea")!, "o", "r", "read")).toBe(`Basic ${Buffer.from("bot:gitea-secret").toString("base64")}`);
    expect(await credentials.authorization(hosts.get("huggingface")!, "o", "r", "read")).toBeUndefined();
    await expect(credentials.authorization(hosts.get("huggingface")!, "o", "r", "write")).rejects.toMatchObject({ reason: "GIT_CREDENTIAL_MISSING", message: "the token of host huggingface is not set (HF_TOKEN)" });
    await expect(credentials.authorization(hosts.get("public")!, "o", "r", "write")).rejects.toMatchObject({ reason: "GIT_HOST_READ_ONLY" });
  });

  it("is optional: no file, no hosts", async () => {
    expect((await loadGitHosts(undefined)).all()).toEqual([]);
  });

  it.each([
    ["an unknown field", `h { base_url: "https://h", token_env: "T", tokn: 1 }`, "h.tokn", "unknown field"],
    ["no credential", `h { base_url: "https://h" }`, "h", "needs token_env, github_app, or anonymous_fetch: true"],
    ["both credentials", `h { base_url: "https://h", token_env: "T", github_app { app_id: 1, private_key_file: "app.pem" } }`, "h", "not both"],
    ["a URL with a password in it", `h { base_url: "https://u:p@h", token_env: "T" }`, "h.base_url", "may not carry a user name or password"],
    ["a URL of another scheme", `h { base_url: "ssh://h", token_env: "T" }`, "h.base_url", "http or https"],
    ["a bad scheme", `h { base_url: "https://h", token_env: "T", scheme: digest }`, "h.scheme", "basic"],
    ["a key file that is not there", `h { base_url: "https://h", github_app { app_id: 1, private_key_file: "missing.pem" } }`, "h.github_app.private_key_file", "cannot read"],
    ["a key that is not RSA", `h { base_url: "https://h", github_app { app_id: 1, private_key_file: "ec.pem" } }`, "h.github_app.private_key_file", "RS256"],
    ["an App id that is not a number", `h { base_url: "https://h", github_app { app_id: "abc", private_key_file: "app.pem" } }`, "h.github_app.app_id", "numeric"],
    ["a webhook secret without an App", `h { base_url: "https://h", token_env: "T", webhook_secret_env: "S" }`, "h.webhook_secret_env", "goes with github_app"],
    ["a host name that is no path segment", `"a/b" { base_url: "https://h", token_env: "T" }`, "a/b", "a host name is"],
  ])("refuses %s, naming the file and the key", async (_case, text, key, reason) => {
    const file = hostsFile(text);
    const error = await loadGitHosts(file).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(GitHostsFileError);
    expect(error).toMatchObject({ file, key });
    expect((error as Error).message).toContain(reason);
  });
});
