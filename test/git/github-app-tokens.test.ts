import { createPrivateKey } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GitHubAppTokens } from "../../src/git/github-app-tokens.js";
import { startScriptedGitHub, type ScriptedGitHub } from "../support/scripted-github.js";

describe("a GitHub App's installation tokens", () => {
  let github: ScriptedGitHub;
  let now = Date.parse("2026-06-01T12:00:00Z");
  const clock = { now: () => new Date(now) };
  let tokens: GitHubAppTokens;

  beforeAll(async () => {
    // Tokens live ten minutes here; Axon stops handing one out five minutes before it expires.
    github = await startScriptedGitHub({ installations: { 7: ["acme/widgets", "acme/gadgets"] }, tokenLifetimeMs: 10 * 60_000, now: () => now });
    tokens = new GitHubAppTokens({ appId: String(github.appId), privateKey: createPrivateKey(github.privateKeyPem), apiUrl: github.url }, clock);
  });
  afterAll(() => github?.close());

  it("mints one per repository and permission, with an RS256 JWT GitHub accepts", async () => {
    const read = await tokens.token("acme", "widgets", "read");
    const write = await tokens.token("acme", "widgets", "write");
    const other = await tokens.token("acme", "gadgets", "read");
    expect(new Set([read, write, other]).size).toBe(3);
    expect(github.minted.map(({ repositories, permissions }) => [repositories, permissions])).toEqual([
      [["widgets"], { contents: "read" }],
      [["widgets"], { contents: "write" }],
      [["gadgets"], { contents: "read" }],
    ]);
    expect(github.rejectedJwts).toBe(0);
  });

  it("reuses a token until five minutes before it expires, and mints once for requests that arrive together", async () => {
    const minted = github.minted.length;
    const first = await tokens.token("acme", "widgets", "read");
    now += 4 * 60_000;
    expect(await tokens.token("acme", "widgets", "read")).toBe(first);
    expect(github.minted.length).toBe(minted);
    now += 2 * 60_000;
    const together = await Promise.all([tokens.token("acme", "widgets", "read"), tokens.token("acme", "widgets", "read")]);
    expect(together[0]).toBe(together[1]);
    expect(together[0]).not.toBe(first);
    expect(github.minted.length).toBe(minted + 1);
  });

  it("forgets an installation's tokens on request, and says when the App is not installed", async () => {
    const minted = github.minted.length;
    expect(tokens.forgetInstallation(7)).toBe(3);
    await tokens.token("acme", "widgets", "read");
    expect(github.minted.length).toBe(minted + 1);
    await expect(tokens.token("acme", "private", "read")).rejects.toMatchObject({ reason: "GIT_APP_NOT_INSTALLED", message: "the GitHub App is not installed on acme/private" });
  });
});
