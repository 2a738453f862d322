import { AxonError, Code } from "../errors.js";
import type { Clock } from "../operations/clock.js";
import { GitHubAppTokens, type RepositoryAccess } from "./github-app-tokens.js";
import type { GitHost, GitHosts } from "./hosts.js";

export type { RepositoryAccess };

/**
 * The Authorization header Axon sends a host for one repository, made when a request needs it and handed only to
 * the upstream request. Fetches from a host with `anonymous_fetch` carry none.
 */
export class UpstreamCredentials {
  private readonly apps = new Map<string, GitHubAppTokens>();

  constructor(
    private readonly hosts: GitHosts,
    clock: Clock,
  ) {
    for (const host of hosts.all()) {
      if (host.credential.kind === "github_app") this.apps.set(host.name, new GitHubAppTokens(host.credential, clock));
    }
  }

  /** The host's GitHub App tokens, when it authenticates as one. */
  app(hostName: string): GitHubAppTokens | undefined {
    return this.apps.get(hostName);
  }

  async authorization(host: GitHost, owner: string, repo: string, access: RepositoryAccess): Promise<string | undefined> {
    if (access === "read" && host.anonymousFetch) return undefined;
    const credential = host.credential;
    switch (credential.kind) {
      case "none":
        throw new AxonError(Code.PermissionDenied, "GIT_HOST_READ_ONLY", `host ${host.name} has no credential: only fetches of public repositories go through it`);
      case "token": {
        const token = this.hosts.secret(credential.tokenEnv);
        if (token === undefined) {
          throw new AxonError(Code.FailedPrecondition, "GIT_CREDENTIAL_MISSING", `the token of host ${host.name} is not set (${credential.tokenEnv})`);
        }
        return credential.scheme === "bearer" ? `Bearer ${token}` : basic(credential.username, token);
      }
      case "github_app":
        return basic("x-access-token", await this.apps.get(host.name)!.token(owner, repo, access));
    }
  }
}

function basic(username: string, password: string): string {
  return `Basic ${Buffer.from(`${username}:${password}`).toString("base64")}`;
}
