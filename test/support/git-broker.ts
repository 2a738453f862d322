import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { startAxonProcess, type AxonProcess } from "./axon-process.js";
import { gitSandbox, type GitSandbox } from "./git.js";
import { startGitHost, type ScriptedGitHost } from "./git-host.js";
import { alice, bob, operator, roomyAdmission } from "./operations.js";
import { until } from "./wait.js";

type Json = Record<string, any>;

export interface GitBroker {
  axon: AxonProcess;
  host: ScriptedGitHost;
  /** The agent's Git: a HOME of its own whose global config sends the host's URLs through Axon. */
  agent: GitSandbox;
  /** Where Axon keeps its database and files. */
  dataDir: string;
  /** Axon's environment: another replica started with it shares the files (and, with DATABASE_URL, the database). */
  env: Record<string, string>;
  /** The URL an agent uses for a repository: the host's own, which its Git config rewrites to Axon's. */
  remote(repository: string): string;
  /** Axon's `git request` log lines of `service`, once there are at least `count` (a line follows its answer). */
  gitLog(service: string, count: number): Promise<Json[]>;
  /** The first `git request` log line that `matches`, once it is there. */
  gitLogWhere(matches: (line: Json) => boolean): Promise<Json>;
  /** Operator V1 over REST, as the console or `axon operator` calls it. */
  operator: ReturnType<typeof operatorApi>;
  /** Everything of Axon's an agent or an operator could read, and its logs and database: no secret may be in it. */
  everything(): string;
  close(): Promise<void>;
}

export const hostName = "scripted";

/**
 * Axon (the built `dist/main.js`) in front of a scripted Git host, with an agent's Git configured by the two
 * documented `git config` lines: the host's URLs rewritten to Axon's, and a credential helper answering the client
 * secret from AXON_CLIENT_SECRET.
 */
export async function startGitBroker(
  options: { policy?: Json; env?: Record<string, string>; host?: ScriptedGitHost; name?: string; hostsFile?: (hostUrl: string, dir: string) => string } = {},
): Promise<GitBroker> {
  const host = options.host ?? (await startGitHost());
  const name = options.name ?? hostName;
  const dir = mkdtempSync(path.join(os.tmpdir(), "axon-git-broker-"));
  const dataDir = path.join(dir, "data");
  mkdirSync(dataDir);
  const file = (name: string, text: string) => {
    writeFileSync(path.join(dir, name), text, { mode: 0o600 });
    return path.join(dir, name);
  };
  const env: Record<string, string> = {
    AXON_DATA_DIR: dataDir,
    AXON_CLIENTS_FILE: file("clients", `alice = ${alice}\nbob = ${bob}\n`),
    AXON_OPERATORS_FILE: file("operators", `ops = ${operator}\n`),
    AXON_ADMISSION_FILE: file("admission.json", JSON.stringify(roomyAdmission)),
    AXON_GIT_HOSTS_FILE: file("git-hosts.hocon", options.hostsFile?.(host.url, dir) ?? `${name} { base_url: "${host.url}", token_env: "SCRIPTED_HOST_TOKEN" }\n`),
    SCRIPTED_HOST_TOKEN: host.token,
    ...(options.policy ? { AXON_POLICY_FILE: file("policy.json", JSON.stringify(options.policy)) } : {}),
    ...options.env,
  };
  const axon = await startAxonProcess(env);
  const agent = gitSandbox();
  agent.env.AXON_CLIENT_SECRET = alice;
  // The two lines docs/git.md gives an agent that cannot run `axon git install`.
  await agent.git(["config", "--global", `url.${axon.url}/git/${name}/.insteadOf`, `${host.url}/`]);
  await agent.git(["config", "--global", `credential.${axon.url}.helper`, '!f() { test "$1" = get && echo username=axon && echo "password=$AXON_CLIENT_SECRET"; }; f']);

  return {
    axon,
    host,
    agent,
    dataDir,
    env,
    remote: (repository) => `${host.url}/${repository}`,
    operator: operatorApi(axon.url),
    gitLog(service, count) {
      const lines = () => axon.logs.filter((line) => line.msg === "git request" && line.service === service) as Json[];
      return until(() => (lines().length >= count ? lines() : undefined), `${count} ${service} log lines`);
    },
    gitLogWhere(matches) {
      return until(() => axon.logs.find((line) => line.msg === "git request" && matches(line as Json)) as Json | undefined, "a matching git request log line");
    },
    everything() {
      const database = readdirSync(dataDir)
        .filter((name) => name.startsWith("axon.db"))
        .map((name) => readFileSync(path.join(dataDir, name)).toString("latin1"));
      return [JSON.stringify(axon.logs), ...database].join("\n");
    },
    async close() {
      await axon.stop();
      if (!options.host) await host.close();
    },
  };
}

export function operatorApi(baseUrl: string) {
  const call = async (method: string, route: string, body?: unknown) => {
    const response = await fetch(baseUrl + route, {
      method,
      headers: { authorization: `Bearer ${operator}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as Json };
  };
  const api = {
    call,
    pending: async (): Promise<Json[]> => (await call("GET", "/api/operator/v1/requests?status=pending")).body.requests as Json[],
    /** Waits until `count` requests are pending for `repository` (a push is held once its updates are classified). */
    waitForPending: (repository: string, count = 1) =>
      until(async () => {
        const pending = (await api.pending()).filter((request) => request.target?.name === repository);
        return pending.length >= count ? pending : undefined;
      }, `${count} pending request(s) for ${repository}`),
    /** The request with its linked operation. */
    get: async (id: string): Promise<Json> => (await call("GET", `/api/operator/v1/requests/${id}`)).body,
    async decide(action: "approve" | "deny", id: string, terms: Json = {}) {
      const request = await call("GET", `/api/operator/v1/requests/${id}`);
      return call("POST", `/api/operator/v1/requests/${id}/${action}`, { expected_revision: request.body.revision, ...terms });
    },
  };
  return api;
}
