import type { KeyObject } from "node:crypto";
import { SignJWT } from "jose";
import { AxonError, Code } from "../errors.js";
import { systemClock, type Clock } from "../operations/clock.js";

/** What a request needs of the repository: `read` to fetch, `write` to push. */
export type RepositoryAccess = "read" | "write";

export interface GitHubApp {
  appId: string;
  privateKey: KeyObject;
  apiUrl: string;
}

/** A cached token is not handed out this close to its expiry: a long push must not outlive the token it started with. */
const EXPIRY_MARGIN_MS = 5 * 60_000;
const API_TIMEOUT_MS = 10_000;

interface CachedToken {
  installationId: number;
  token: string;
  expiresAt: number;
}

/**
 * A GitHub App's installation tokens (GitHub's "Authenticating as a GitHub App installation"): the App signs a
 * short RS256 JWT, finds the installation that covers the repository, and mints a token narrowed to that one
 * repository and to `contents: read` or `contents: write`. Tokens are cached until shortly before they expire, and
 * dropped when a webhook says the installation went away or changed. No token or JWT ever leaves this object
 * except to GitHub and into the upstream request's Authorization header.
 */
export class GitHubAppTokens {
  private readonly tokens = new Map<string, CachedToken>();
  private readonly minting = new Map<string, Promise<CachedToken>>();
  private readonly installations = new Map<string, number>();

  constructor(
    private readonly app: GitHubApp,
    private readonly clock: Clock = systemClock,
  ) {}

  async token(owner: string, repo: string, access: RepositoryAccess): Promise<string> {
    const key = `${owner.toLowerCase()}/${repo.toLowerCase()}|${access}`;
    const cached = this.tokens.get(key);
    if (cached !== undefined && cached.expiresAt - EXPIRY_MARGIN_MS > this.clock.now().getTime()) return cached.token;
    let minting = this.minting.get(key);
    if (minting === undefined) {
      minting = this.mint(owner, repo, access).finally(() => this.minting.delete(key));
      this.minting.set(key, minting);
    }
    const minted = await minting;
    this.tokens.set(key, minted);
    return minted.token;
  }

  /** Forgets every token of an installation, and which repositories it covered (a webhook said it changed). */
  forgetInstallation(installationId: number): number {
    let dropped = 0;
    for (const [key, token] of this.tokens) {
      if (token.installationId === installationId) {
        this.tokens.delete(key);
        dropped++;
      }
    }
    for (const [repository, id] of this.installations) if (id === installationId) this.installations.delete(repository);
    return dropped;
  }

  private async mint(owner: string, repo: string, access: RepositoryAccess): Promise<CachedToken> {
    const jwt = await this.appJwt();
    const installationId = await this.installationOf(owner, repo, jwt);
    const response = await this.call(`/app/installations/${installationId}/access_tokens`, jwt, {
      repositories: [repo],
      permissions: { contents: access },
    });
    if (response.status === 404 || response.status === 422) {
      // The installation went away, or no longer covers the repository: look it up afresh next time.
      this.forgetInstallation(installationId);
      throw unavailable(`the GitHub App cannot reach ${owner}/${repo} (GitHub answered ${response.status})`, "GIT_APP_NOT_INSTALLED");
    }
    if (response.status !== 201) throw unavailable(`GitHub did not mint an installation token (status ${response.status})`);
    const body = (await response.json().catch(() => undefined)) as { token?: unknown; expires_at?: unknown } | undefined;
    const expiresAt = typeof body?.expires_at === "string" ? Date.parse(body.expires_at) : Number.NaN;
    if (typeof body?.token !== "string" || body.token === "" || Number.isNaN(expiresAt)) throw unavailable("GitHub answered an installation token Axon cannot read");
    return { installationId, token: body.token, expiresAt };
  }

  private async installationOf(owner: string, repo: string, jwt: string): Promise<number> {
    const repository = `${owner.toLowerCase()}/${repo.toLowerCase()}`;
    const known = this.installations.get(repository);
    if (known !== undefined) return known;
    const response = await this.call(`/repos/${encodeURIComponent(owner)}/${encodeURIComponent(repo)}/installation`, jwt);
    if (response.status === 404) throw unavailable(`the GitHub App is not installed on ${owner}/${repo}`, "GIT_APP_NOT_INSTALLED");
    if (response.status !== 200) throw unavailable(`GitHub did not name the App's installation (status ${response.status})`);
    const body = (await response.json().catch(() => undefined)) as { id?: unknown } | undefined;
    if (typeof body?.id !== "number") throw unavailable("GitHub answered an installation Axon cannot read");
    this.installations.set(repository, body.id);
    return body.id;
  }

  /** The App's own JWT: issued a minute in the past (clock drift), valid for nine minutes, as GitHub allows ten. */
  private appJwt(): Promise<string> {
    const now = Math.floor(this.clock.now().getTime() / 1000);
    return new SignJWT({}).setProtectedHeader({ alg: "RS256", typ: "JWT" }).setIssuer(this.app.appId).setIssuedAt(now - 60).setExpirationTime(now + 9 * 60).sign(this.app.privateKey);
  }

  private async call(route: string, jwt: string, body?: unknown): Promise<Response> {
    try {
      return await fetch(`${this.app.apiUrl}${route}`, {
        method: body === undefined ? "GET" : "POST",
        headers: {
          authorization: `Bearer ${jwt}`,
          accept: "application/vnd.github+json",
          "x-github-api-version": "2022-11-28",
          "user-agent": "axon-git-broker",
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(API_TIMEOUT_MS),
      });
    } catch {
      // The fetch error may quote the request; only the fact goes on.
      throw unavailable("the GitHub API could not be reached");
    }
  }
}

function unavailable(message: string, reason = "GIT_CREDENTIAL_UNAVAILABLE"): AxonError {
  return new AxonError(Code.Unavailable, reason, message);
}
