import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { AxonError, Code } from "../../src/errors.js";
import {
  decide,
  defaultPolicy,
  globMatches,
  loadPolicy,
  narrowGrant,
  operationsAvailableTo,
  parsePolicy,
  PolicyFileError,
  requestedGrantTerms,
  targetMatches,
  type GrantView,
  type Policy,
  type PolicyRule,
} from "../../src/operations/policy.js";

let folder: string;
beforeAll(async () => {
  folder = await mkdtemp(path.join(tmpdir(), "axon-policy-"));
});
afterAll(async () => {
  await rm(folder, { recursive: true, force: true });
});

async function policyFile(name: string, text: string): Promise<string> {
  const file = path.join(folder, name);
  await writeFile(file, text);
  return file;
}

function policy(...rules: PolicyRule[]): Policy {
  return { files: [], rules };
}

const alice = { clientId: "alice", operation: "http.request", target: { credential: "github", path: "/repos/x/issues" } };

function windowGrant(overrides: Partial<GrantView> = {}): GrantView {
  return { id: "grant_1", clientId: "alice", operation: alice.operation, target: alice.target, mode: "window", status: "active", ...overrides };
}

async function errorOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe("the built-in default policy", () => {
  it("is used when no file is given", async () => {
    expect(await loadPolicy()).toBe(defaultPolicy);
    expect(await loadPolicy("")).toBe(defaultPolicy);
  });

  it("allows agent.chat", () => {
    expect(decide(defaultPolicy, { clientId: "any", operation: "agent.chat", target: { network: "hello" } }, [])).toEqual({
      effect: "allow",
      ruleId: "builtin-agent-chat",
    });
  });

  it("asks for approval of http.request with a one-use execution grant", () => {
    const decision = decide(defaultPolicy, alice, []);
    expect(decision).toEqual({
      effect: "request",
      ruleId: "builtin-http-request",
      grantPolicy: { mode: "execution", maxUses: 1, maxAllowedUses: 1 },
    });
  });

  it("denies every other operation as no match, with no rule id", () => {
    expect(decide(defaultPolicy, { clientId: "alice", operation: "shell.exec", target: {} }, [])).toEqual({ effect: "deny" });
  });
});

describe("decision order: deny > active window grant > allow > request > no match", () => {
  const denyRule: PolicyRule = { id: "no-admin", effect: "deny", operations: ["http.request"], targets: [{ path: "/admin/*" }] };
  const allowRule: PolicyRule = { id: "open", effect: "allow", operations: ["http.request"] };
  const requestRule: PolicyRule = { id: "ask", effect: "request", operations: ["http.request"], grantPolicy: { mode: "execution", defaultMaxUses: 1, maxUses: 1 } };

  it("a matching deny beats an allow listed before it", () => {
    const input = { ...alice, target: { credential: "github", path: "/admin/users" } };
    expect(decide(policy(allowRule, denyRule), input, [])).toEqual({ effect: "deny", ruleId: "no-admin" });
  });

  it("a matching deny beats an active window grant", () => {
    const input = { ...alice, target: { credential: "github", path: "/admin/users" } };
    expect(decide(policy(denyRule), input, [windowGrant({ target: input.target })])).toEqual({ effect: "deny", ruleId: "no-admin" });
  });

  it("an active window grant beats a static allow", () => {
    expect(decide(policy(allowRule), alice, [windowGrant()])).toEqual({ effect: "use_grant", grantId: "grant_1" });
  });

  it("an active window grant applies even when no rule matches", () => {
    expect(decide(policy(), alice, [windowGrant()])).toEqual({ effect: "use_grant", grantId: "grant_1" });
  });

  it("allow beats request whatever their order", () => {
    expect(decide(policy(requestRule, allowRule), alice, [])).toEqual({ effect: "allow", ruleId: "open" });
  });

  it("request applies when nothing stronger matches", () => {
    expect(decide(policy(requestRule), alice, [])).toMatchObject({ effect: "request", ruleId: "ask" });
  });

  it("no matching rule is a deny", () => {
    expect(decide(policy(denyRule), alice, [])).toEqual({ effect: "deny" });
  });

  it("among rules of one effect the first in file order wins", () => {
    const first: PolicyRule = { ...requestRule, id: "first" };
    const second: PolicyRule = { ...requestRule, id: "second", grantPolicy: { mode: "window", defaultMinutes: 5, maxMinutes: 5, defaultMaxUses: 3, maxUses: 3 } };
    expect(decide(policy(first, second), alice, [])).toMatchObject({ ruleId: "first", grantPolicy: { mode: "execution" } });
  });

  it("a request rule offers its window terms: defaults and ceilings", () => {
    const windowRule: PolicyRule = { ...requestRule, grantPolicy: { mode: "window", defaultMinutes: 30, maxMinutes: 120, defaultMaxUses: 10, maxUses: 50 } };
    expect(decide(policy(windowRule), alice, [])).toEqual({
      effect: "request",
      ruleId: "ask",
      grantPolicy: { mode: "window", minutes: 30, maxUses: 10, maxMinutes: 120, maxAllowedUses: 50 },
    });
  });
});

describe("which window grants match", () => {
  it("a grant for another client, operation or target does not match", () => {
    expect(decide(policy(), alice, [windowGrant({ clientId: "bob" })])).toEqual({ effect: "deny" });
    expect(decide(policy(), alice, [windowGrant({ operation: "agent.chat" })])).toEqual({ effect: "deny" });
    expect(decide(policy(), alice, [windowGrant({ target: { credential: "github", path: "/repos/y/issues" } })])).toEqual({ effect: "deny" });
  });

  it("a grant target is exact: a `*` in it is not a glob", () => {
    const grant = windowGrant({ target: { credential: "github", path: "/repos/*" } });
    expect(decide(policy(), alice, [grant])).toEqual({ effect: "deny" });
  });

  it("a grant target matches by semantic JSON equality, not by spelling", () => {
    const input = { clientId: "alice", operation: "agent.chat", target: { network: "n", options: { b: 1, a: 2.0 } } };
    const grant = windowGrant({ operation: "agent.chat", target: { options: { a: 2, b: 1 }, network: "n" } });
    expect(decide(policy(), input, [grant])).toEqual({ effect: "use_grant", grantId: "grant_1" });
  });

  it("a grant with extra or missing target fields does not match", () => {
    expect(decide(policy(), alice, [windowGrant({ target: { credential: "github" } })])).toEqual({ effect: "deny" });
    expect(decide(policy(), alice, [windowGrant({ target: { ...alice.target, extra: 1 } })])).toEqual({ effect: "deny" });
  });

  it("execution grants, inactive grants and used-up grants are ignored", () => {
    expect(decide(policy(), alice, [windowGrant({ mode: "execution" })])).toEqual({ effect: "deny" });
    expect(decide(policy(), alice, [windowGrant({ status: "pending" })])).toEqual({ effect: "deny" });
    expect(decide(policy(), alice, [windowGrant({ usesRemaining: 0 })])).toEqual({ effect: "deny" });
    expect(decide(policy(), alice, [windowGrant({ usesRemaining: 1 })])).toEqual({ effect: "use_grant", grantId: "grant_1" });
  });

  it("a grant at or past its expiry is ignored when the caller passes now", () => {
    const now = new Date("2025-01-01T12:00:00Z");
    expect(decide(policy(), { ...alice, now }, [windowGrant({ expiresAt: now })])).toEqual({ effect: "deny" });
    expect(decide(policy(), { ...alice, now }, [windowGrant({ expiresAt: new Date(now.getTime() + 1) })])).toEqual({ effect: "use_grant", grantId: "grant_1" });
  });

  it("the grant expiring soonest is used first, then the smallest id", () => {
    const later = windowGrant({ id: "grant_a", expiresAt: new Date("2025-01-01T13:00:00Z") });
    const sooner = windowGrant({ id: "grant_b", expiresAt: new Date("2025-01-01T12:30:00Z") });
    const sameAsSooner = windowGrant({ id: "grant_c", expiresAt: new Date("2025-01-01T12:30:00Z") });
    expect(decide(policy(), alice, [later, sameAsSooner, sooner])).toEqual({ effect: "use_grant", grantId: "grant_b" });
  });
});

describe("rule matching", () => {
  it("a rule without clients applies to every client; with clients only to those named (globs allowed)", () => {
    const rule: PolicyRule = { id: "bots", effect: "allow", clients: ["bot-*", "carol"], operations: ["agent.chat"] };
    const chat = (clientId: string) => decide(policy(rule), { clientId, operation: "agent.chat", target: {} }, []).effect;
    expect(chat("bot-7")).toBe("allow");
    expect(chat("carol")).toBe("allow");
    expect(chat("carol2")).toBe("deny");
    expect(chat("alice")).toBe("deny");
  });

  it("operations are globs", () => {
    const rule: PolicyRule = { id: "http", effect: "allow", operations: ["http.*"] };
    expect(decide(policy(rule), alice, []).effect).toBe("allow");
    expect(decide(policy(rule), { ...alice, operation: "agent.chat" }, []).effect).toBe("deny");
  });

  it("every field of a target pattern must match; fields it leaves out are free", () => {
    const pattern = { credential: "github", path: "/repos/*/issues" };
    expect(targetMatches(pattern, { credential: "github", path: "/repos/x/issues", extra: true })).toBe(true);
    expect(targetMatches(pattern, { credential: "gitlab", path: "/repos/x/issues" })).toBe(false);
    expect(targetMatches(pattern, { credential: "github" })).toBe(false);
    expect(targetMatches({}, { anything: 1 })).toBe(true);
  });

  it("non-string pattern fields match by JSON equality and strings never match non-strings", () => {
    expect(targetMatches({ port: 443, sizes: [1, 2], opts: { x: 1 } }, { port: 443.0, sizes: [1, 2], opts: { x: 1 } })).toBe(true);
    expect(targetMatches({ sizes: [1, 2] }, { sizes: [2, 1] })).toBe(false);
    expect(targetMatches({ port: "*" }, { port: 443 })).toBe(false);
    expect(targetMatches({ port: 443 }, { port: "443" })).toBe(false);
  });

  it("a target that is not an object matches no pattern", () => {
    expect(targetMatches({}, null)).toBe(false);
    expect(targetMatches({}, ["a"])).toBe(false);
  });

  it("a rule with several target patterns applies when any of them matches", () => {
    const rule: PolicyRule = { id: "two", effect: "allow", operations: ["http.request"], targets: [{ path: "/a" }, { path: "/repos/*" }] };
    expect(decide(policy(rule), alice, []).effect).toBe("allow");
    expect(decide(policy(rule), { ...alice, target: { credential: "github", path: "/b" } }, []).effect).toBe("deny");
  });
});

describe("lists and limits", () => {
  const repo = { kind: "repo", host: "github", owner: "o", name: "r" };
  const push = (refs: string[]) => ({ clientId: "alice", operation: "git.push.force", target: { ...repo, refs } });

  it("a pattern's list of globs matches a target list only when every element matches one of them", () => {
    const pattern = { kind: "repo", refs: ["refs/heads/agent/*", "refs/tags/v*"] };
    expect(targetMatches(pattern, push(["refs/heads/agent/a", "refs/tags/v1"]).target)).toBe(true);
    expect(targetMatches(pattern, push(["refs/heads/agent/a", "refs/heads/main"]).target)).toBe(false);
    expect(targetMatches(pattern, { ...repo, refs: "refs/heads/agent/a" })).toBe(false);
  });

  it("a window grant covers calls on some of the refs it was approved for, and no other", () => {
    const grant = windowGrant({ operation: "git.push.force", target: { ...repo, refs: ["refs/heads/a", "refs/heads/b"] } });
    const request = policy({ id: "ask", effect: "request", operations: ["git.*"] });
    expect(decide(request, push(["refs/heads/b"]), [grant])).toEqual({ effect: "use_grant", grantId: "grant_1" });
    expect(decide(request, push(["refs/heads/a", "refs/heads/b"]), [grant]).effect).toBe("use_grant");
    expect(decide(request, push(["refs/heads/a", "refs/heads/c"]), [grant]).effect).toBe("request");
    expect(decide(request, { ...push(["refs/heads/a"]), target: { ...repo, owner: "x", refs: ["refs/heads/a"] } }, [grant]).effect).toBe("request");
  });

  it("a rule with limits applies only to a call carrying each attribute within them", () => {
    const rules = policy({ id: "small", effect: "allow", operations: ["inference.chat"], limits: { max_tokens: 512, body_bytes: 4096 } });
    const call = { clientId: "alice", operation: "inference.chat", target: { kind: "model" } };
    expect(decide(rules, { ...call, attributes: { max_tokens: 512, body_bytes: 10 } }, []).effect).toBe("allow");
    expect(decide(rules, { ...call, attributes: { max_tokens: 513, body_bytes: 10 } }, []).effect).toBe("deny");
    expect(decide(rules, { ...call, attributes: { body_bytes: 10 } }, []).effect).toBe("deny");
    expect(parsePolicy({ rules: [{ id: "a", effect: "allow", operations: ["x"], limits: { max_tokens: 0 } }] }, "f")[0]!.limits).toEqual({ max_tokens: 0 });
  });

  it("the default lets fetches and models through and holds every Git write and held tool call for an operator", () => {
    const effect = (operation: string) => decide(defaultPolicy, { clientId: "alice", operation, target: {} }, []).effect;
    expect(["git.fetch", "git.lfs.read", "inference.chat", "inference.models.list"].map(effect)).toEqual(["allow", "allow", "allow", "allow"]);
    expect(["git.push.force", "git.push.fast_forward", "git.ref.delete", "git.tag.create", "git.lfs.write", "agent.tool_call"].map(effect)).toEqual(Array(6).fill("request"));
  });
});

describe("globs", () => {
  it("`*` matches any run of characters, slashes and the empty run included", () => {
    expect(globMatches("*", "")).toBe(true);
    expect(globMatches("/repos/*", "/repos/a/b/c")).toBe(true);
    expect(globMatches("a*b*c", "aXXbYYc")).toBe(true);
    expect(globMatches("a*b*c", "aXXbYY")).toBe(false);
    expect(globMatches("*.example.com", "api.example.com")).toBe(true);
    expect(globMatches("*.example.com", "example.com")).toBe(false);
    expect(globMatches("**", "x")).toBe(true);
  });

  it("everything but `*` is literal: `?`, `.` and brackets have no meaning", () => {
    expect(globMatches("a?c", "abc")).toBe(false);
    expect(globMatches("a.c", "abc")).toBe(false);
    expect(globMatches("[ab]", "a")).toBe(false);
    expect(globMatches("[ab]", "[ab]")).toBe(true);
  });

  it("without `*` a pattern must equal the text", () => {
    expect(globMatches("/repos", "/repos/x")).toBe(false);
    expect(globMatches("/repos", "/repos")).toBe(true);
  });

  it("stays fast on hostile input", () => {
    const text = "a".repeat(16 * 1024);
    const started = performance.now();
    expect(globMatches("*a*a*a*a*a*a*a*a*b", text)).toBe(false);
    expect(performance.now() - started).toBeLessThan(1000);
  });
});

describe("operations a client may use", () => {
  it("lists registered operations some allow or request rule names for the client, minus unconditional denies", () => {
    const rules = policy(
      { id: "chat", effect: "allow", operations: ["agent.chat"] },
      { id: "http", effect: "request", clients: ["alice"], operations: ["http.*"], grantPolicy: { mode: "execution", defaultMaxUses: 1, maxUses: 1 } },
      { id: "no-bob", effect: "deny", clients: ["bob"], operations: ["*"] },
      { id: "no-admin", effect: "deny", operations: ["http.request"], targets: [{ path: "/admin/*" }] },
    );
    const registered = ["agent.chat", "http.request", "shell.exec"];
    expect(operationsAvailableTo(rules, "alice", registered)).toEqual(["agent.chat", "http.request"]);
    expect(operationsAvailableTo(rules, "carol", registered)).toEqual(["agent.chat"]);
    expect(operationsAvailableTo(rules, "bob", registered)).toEqual([]);
  });
});

describe("narrowing a grant on approval", () => {
  const window = { mode: "window" as const, minutes: 60, maxUses: 10 };
  const execution = { mode: "execution" as const, maxUses: 1 };

  function violationsOf(run: () => unknown): { field: string; description: string }[] {
    try {
      run();
    } catch (error) {
      expect(error).toBeInstanceOf(AxonError);
      const axonError = error as AxonError;
      expect(axonError.code).toBe(Code.InvalidArgument);
      expect(axonError.reason).toBe("INVALID_GRANT_DECISION");
      expect(axonError.metadata.category).toBe("rejected");
      expect(axonError.message).not.toMatch(/[/:,?#&=+$@;]/);
      return axonError.fieldViolations;
    }
    throw new Error("expected a refusal");
  }

  it("an approval without terms keeps the requested ones", () => {
    expect(narrowGrant(window, {})).toEqual(window);
    expect(narrowGrant(execution, { minutes: null, max_uses: null })).toEqual(execution);
  });

  it("an approval may shorten the window and lower the uses", () => {
    expect(narrowGrant(window, { minutes: 15, max_uses: 3 })).toEqual({ mode: "window", minutes: 15, maxUses: 3 });
    expect(narrowGrant(window, { minutes: 60, max_uses: 10 })).toEqual(window);
  });

  it("an approval may not lengthen the window", () => {
    expect(violationsOf(() => narrowGrant(window, { minutes: 61 }))).toEqual([{ field: "minutes", description: expect.stringContaining("60") }]);
  });

  it("an approval may not raise the uses", () => {
    expect(violationsOf(() => narrowGrant(window, { max_uses: 11 }))).toEqual([{ field: "max_uses", description: expect.stringContaining("10") }]);
    expect(violationsOf(() => narrowGrant(execution, { max_uses: 2 }))).toEqual([{ field: "max_uses", description: expect.any(String) }]);
  });

  it("an approval of an execution request with minutes is refused: it never turns into a window grant", () => {
    expect(violationsOf(() => narrowGrant(execution, { minutes: 5 }))).toEqual([{ field: "minutes", description: expect.any(String) }]);
  });

  it("an approval with no minutes on an execution request stays an execution grant", () => {
    expect(narrowGrant(execution, { max_uses: 1 })).toEqual({ mode: "execution", maxUses: 1 });
  });

  it("zero, negative, fractional and out-of-range values are refused, every bad field reported", () => {
    expect(violationsOf(() => narrowGrant(window, { minutes: 0, max_uses: -1 })).map((violation) => violation.field)).toEqual(["minutes", "max_uses"]);
    expect(violationsOf(() => narrowGrant(window, { minutes: 1.5 }))).toHaveLength(1);
    expect(violationsOf(() => narrowGrant(window, { max_uses: 2 ** 31 }))).toHaveLength(1);
  });
});

describe("the terms a new approval asks for", () => {
  const windowPolicy = { mode: "window" as const, minutes: 30, maxUses: 10, maxMinutes: 120, maxAllowedUses: 50 };
  const executionPolicy = { mode: "execution" as const, maxUses: 1, maxAllowedUses: 1 };

  it("are the rule's defaults when nothing is asked", () => {
    expect(requestedGrantTerms(windowPolicy)).toEqual({ mode: "window", minutes: 30, maxUses: 10 });
    expect(requestedGrantTerms(executionPolicy)).toEqual({ mode: "execution", maxUses: 1 });
  });

  it("may be asked up to the rule's ceilings", () => {
    expect(requestedGrantTerms(windowPolicy, { minutes: 120, max_uses: 50 })).toEqual({ mode: "window", minutes: 120, maxUses: 50 });
  });

  it("are refused beyond the ceilings", () => {
    expect(() => requestedGrantTerms(windowPolicy, { minutes: 121 })).toThrow(AxonError);
    expect(() => requestedGrantTerms(windowPolicy, { max_uses: 51 })).toThrow(AxonError);
  });

  it("never carry minutes for an execution rule", () => {
    expect(() => requestedGrantTerms(executionPolicy, { minutes: 5 })).toThrow(AxonError);
    expect(() => requestedGrantTerms(executionPolicy, { max_uses: 2 })).toThrow(AxonError);
  });
});

describe("loading a policy file", () => {
  it("reads HOCON with comments, unquoted keys and globs", async () => {
    const file = await policyFile(
      "policy.hocon",
      `
      # who may do what
      rules = [
        { id = chat, effect = allow, operations = [agent.chat] }
        {
          id = github-reads
          effect = request
          clients = ["alice", "bot-*"]
          operations = ["http.request"]
          targets = [{ credential = github, path = "/repos/*" }]
          grant_policy { mode = window, default_minutes = 15, max_minutes = 60, default_max_uses = 5, max_uses = 20 }
        }
        { id = no-shell, effect = deny, operations = ["shell.*"] }
      ]
      `,
    );
    const loaded = await loadPolicy(file);
    expect(loaded.source).toBe(file);
    expect(loaded.files).toContain(file);
    expect(loaded.rules).toEqual([
      { id: "chat", effect: "allow", operations: ["agent.chat"] },
      {
        id: "github-reads",
        effect: "request",
        clients: ["alice", "bot-*"],
        operations: ["http.request"],
        targets: [{ credential: "github", path: "/repos/*" }],
        grantPolicy: { mode: "window", defaultMinutes: 15, maxMinutes: 60, defaultMaxUses: 5, maxUses: 20 },
      },
      { id: "no-shell", effect: "deny", operations: ["shell.*"] },
    ]);
  });

  it("reads JSON", async () => {
    const file = await policyFile("policy.json", JSON.stringify({ rules: [{ id: "a", effect: "allow", operations: ["agent.chat"] }] }));
    expect((await loadPolicy(file)).rules).toEqual([{ id: "a", effect: "allow", operations: ["agent.chat"] }]);
  });

  it("an empty rule list denies everything", async () => {
    const file = await policyFile("empty.json", '{"rules": []}');
    const loaded = await loadPolicy(file);
    expect(decide(loaded, { clientId: "a", operation: "agent.chat", target: {} }, [])).toEqual({ effect: "deny" });
  });

  it("a request rule without a grant policy gets one-use execution grants", () => {
    expect(parsePolicy({ rules: [{ id: "r", effect: "request", operations: ["x"] }] }, "f")[0]?.grantPolicy).toEqual({
      mode: "execution",
      defaultMaxUses: 1,
      maxUses: 1,
    });
  });

  it("window grant policies fill in missing defaults and ceilings from each other", () => {
    const grantPolicy = (raw: object) => parsePolicy({ rules: [{ id: "r", effect: "request", operations: ["x"], grant_policy: raw }] }, "f")[0]?.grantPolicy;
    expect(grantPolicy({ mode: "window" })).toEqual({ mode: "window", defaultMinutes: 60, maxMinutes: 60, defaultMaxUses: 100, maxUses: 100 });
    expect(grantPolicy({ mode: "window", max_minutes: 10, max_uses: 3 })).toEqual({ mode: "window", defaultMinutes: 10, maxMinutes: 10, defaultMaxUses: 3, maxUses: 3 });
    expect(grantPolicy({ mode: "window", default_minutes: 90 })).toEqual({ mode: "window", defaultMinutes: 90, maxMinutes: 90, defaultMaxUses: 100, maxUses: 100 });
  });

  it("a missing file is an error naming the file", async () => {
    const missing = path.join(folder, "nope.hocon");
    const error = await errorOf(loadPolicy(missing));
    expect(error).toBeInstanceOf(PolicyFileError);
    expect((error as Error).message).toContain(missing);
  });

  it("a syntax error is an error naming the file", async () => {
    const file = await policyFile("broken.hocon", "rules = [ { id = ");
    const error = await errorOf(loadPolicy(file));
    expect(error).toBeInstanceOf(PolicyFileError);
    expect((error as Error).message).toContain(file);
  });

  const invalid: [string, unknown, string, string][] = [
    ["no rules key", {}, "rules", "must be a list"],
    ["an unknown top-level key", { rules: [], rule: [] }, "rule", "not a known key"],
    ["a rule that is not an object", { rules: ["x"] }, "rules[0]", "must be an object"],
    ["a rule without an id", { rules: [{ effect: "allow", operations: ["x"] }] }, "rules[0].id", "non-empty string"],
    ["a duplicate id", { rules: [{ id: "a", effect: "allow", operations: ["x"] }, { id: "a", effect: "deny", operations: ["y"] }] }, "rules[1].id", "already"],
    ["an unknown effect", { rules: [{ id: "a", effect: "permit", operations: ["x"] }] }, "rules[0].effect", "allow, request, deny"],
    ["a misspelled key", { rules: [{ id: "a", effect: "allow", operation: ["x"] }] }, "rules[0].operation", "not a known key"],
    ["no operations", { rules: [{ id: "a", effect: "allow" }] }, "rules[0].operations", "non-empty list"],
    ["an empty operations list", { rules: [{ id: "a", effect: "allow", operations: [] }] }, "rules[0].operations", "non-empty list"],
    ["a non-string operation", { rules: [{ id: "a", effect: "allow", operations: [1] }] }, "rules[0].operations[0]", "non-empty string"],
    ["an empty clients list", { rules: [{ id: "a", effect: "allow", clients: [], operations: ["x"] }] }, "rules[0].clients", "non-empty list"],
    ["an empty targets list", { rules: [{ id: "a", effect: "allow", operations: ["x"], targets: [] }] }, "rules[0].targets", "non-empty list"],
    ["a target that is not an object", { rules: [{ id: "a", effect: "allow", operations: ["x"], targets: ["/x"] }] }, "rules[0].targets[0]", "object"],
    ["a grant policy on an allow rule", { rules: [{ id: "a", effect: "allow", operations: ["x"], grant_policy: { mode: "window" } }] }, "rules[0].grant_policy", "only request rules"],
    ["a grant policy without a mode", { rules: [{ id: "a", effect: "request", operations: ["x"], grant_policy: {} }] }, "rules[0].grant_policy.mode", "window or execution"],
    ["minutes on an execution grant", { rules: [{ id: "a", effect: "request", operations: ["x"], grant_policy: { mode: "execution", default_minutes: 5 } }] }, "rules[0].grant_policy", "no minutes"],
    ["several uses of an execution grant", { rules: [{ id: "a", effect: "request", operations: ["x"], grant_policy: { mode: "execution", max_uses: 2 } }] }, "rules[0].grant_policy", "exactly one use"],
    ["a default above its maximum", { rules: [{ id: "a", effect: "request", operations: ["x"], grant_policy: { mode: "window", default_minutes: 90, max_minutes: 60 } }] }, "rules[0].grant_policy.default_minutes", "max_minutes"],
    ["uses above their maximum", { rules: [{ id: "a", effect: "request", operations: ["x"], grant_policy: { mode: "window", default_max_uses: 9, max_uses: 3 } }] }, "rules[0].grant_policy.default_max_uses", "max_uses"],
    ["a zero limit", { rules: [{ id: "a", effect: "request", operations: ["x"], grant_policy: { mode: "window", max_minutes: 0 } }] }, "rules[0].grant_policy.max_minutes", "whole number"],
    ["an unknown grant policy key", { rules: [{ id: "a", effect: "request", operations: ["x"], grant_policy: { mode: "window", minutes: 5 } }] }, "rules[0].grant_policy.minutes", "not a known key"],
    ["empty limits", { rules: [{ id: "a", effect: "allow", operations: ["x"], limits: {} }] }, "rules[0].limits", "attribute names"],
    ["a limit that is not a whole number", { rules: [{ id: "a", effect: "allow", operations: ["x"], limits: { max_tokens: 1.5 } }] }, "rules[0].limits.max_tokens", "whole number"],
  ];
  it.each(invalid)("refuses %s, naming the file and the key", (_what, document, key, reason) => {
    let thrown: unknown;
    try {
      parsePolicy(document, "/etc/axon/policy.hocon");
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(PolicyFileError);
    const error = thrown as PolicyFileError;
    expect(error.file).toBe("/etc/axon/policy.hocon");
    expect(error.key).toBe(key);
    expect(error.message).toContain("/etc/axon/policy.hocon");
    expect(error.message).toContain(key);
    expect(error.reason).toContain(reason);
  });

  it("refuses a top level that is not an object", () => {
    expect(() => parsePolicy([], "f")).toThrow(PolicyFileError);
  });
});
