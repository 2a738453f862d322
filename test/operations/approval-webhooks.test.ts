import { createHmac } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createLogger } from "../../src/logger.js";
import { defaultAdmissionLimits } from "../../src/operations/admission.js";
import { ApprovalAnnouncer, loadApprovalWebhooks, type AnnouncedRequest } from "../../src/operations/approval-webhooks.js";
import { OperationsBroker } from "../../src/operations/broker.js";
import { Notifier } from "../../src/operations/notifier.js";
import { defaultPolicy } from "../../src/operations/policy.js";
import { nativeProvider } from "../../src/operations/providers/native.js";
import { ProviderRegistry } from "../../src/operations/providers/registry.js";
import { operationsStore } from "../../src/operations/store.js";
import { testDatabases } from "../support/test-databases.js";
import { until } from "../support/wait.js";

interface Delivery {
  headers: IncomingMessage["headers"];
  body: string;
}

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A webhook receiver answering each delivery with the next of `statuses` (then 200), recording what arrived. */
async function receiver(statuses: number[] = []): Promise<{ url: string; deliveries: Delivery[] }> {
  const deliveries: Delivery[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      deliveries.push({ headers: req.headers, body: Buffer.concat(chunks).toString() });
      res.writeHead(statuses.shift() ?? 200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(() => new Promise((resolve) => server.close(resolve)));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, deliveries };
}

function announcer(hooks: ConstructorParameters<typeof ApprovalAnnouncer>[0]["hooks"]): ApprovalAnnouncer {
  const announcing = new ApprovalAnnouncer({ hooks, logger: createLogger("silent"), firstRetryMs: 5 });
  cleanups.push(() => announcing.close());
  return announcing;
}

const request: AnnouncedRequest = {
  grant: {
    id: "req_1",
    clientId: "agent-7",
    operation: "git.push.force",
    target: { kind: "repo", host: "github", owner: "o", name: "r", refs: ["refs/heads/main"] },
    reason: "push main",
    mode: "window",
    expiresAt: new Date("2026-12-04T12:00:00Z"),
    createdAt: new Date("2026-12-04T11:00:00Z"),
  },
  operation: { id: "op_1", presentationTitle: "force-push main of o/r", presentationSummary: "1 ref", arguments: { updates: [{ ref: "refs/heads/main", class: "force" }] }, native: true },
};

describe("approval webhooks", () => {
  it("send the generic body signed with HMAC-SHA256 over its bytes, with a held call's detail", async () => {
    const hook = await receiver();
    announcer([{ name: "ops", url: hook.url, format: "json", secret: "s3cret-for-hmac" }]).announce(request);
    const [delivery] = await until(() => hook.deliveries.length === 1 && hook.deliveries, "the delivery");
    const signature = `sha256=${createHmac("sha256", "s3cret-for-hmac").update(delivery!.body).digest("hex")}`;
    expect(delivery!.headers["x-axon-signature-256"]).toBe(signature);
    expect(delivery!.headers["x-axon-event"]).toBe("request.created");
    expect(JSON.parse(delivery!.body)).toEqual({
      type: "request.created",
      request: { id: "req_1", client_id: "agent-7", operation: "git.push.force", target: request.grant.target, reason: "push main", mode: "window", created_at: "2026-12-04T11:00:00.000Z", expires_at: "2026-12-04T12:00:00.000Z" },
      operation: { id: "op_1", presentation: { title: "force-push main of o/r", summary: "1 ref" }, detail: request.operation!.arguments },
    });
  });

  it("show an agent's own operation by its presentation only", async () => {
    const hook = await receiver();
    announcer([{ name: "ops", url: hook.url, format: "json" }]).announce({ ...request, operation: { ...request.operation!, native: false, arguments: { body: "private" } } });
    const [delivery] = await until(() => hook.deliveries.length === 1 && hook.deliveries, "the delivery");
    expect(delivery!.body).not.toContain("private");
    expect(delivery!.headers["x-axon-signature-256"]).toBeUndefined();
  });

  it("speak Slack's incoming-webhook JSON", async () => {
    const hook = await receiver();
    announcer([{ name: "slack", url: hook.url, format: "slack" }]).announce(request);
    const [delivery] = await until(() => hook.deliveries.length === 1 && hook.deliveries, "the delivery");
    const { text } = JSON.parse(delivery!.body) as { text: string };
    expect(text).toContain("agent-7 asks for git.push.force: force-push main of o/r");
    expect(text).toContain("axon operator approve req_1");
  });

  it("try a failing receiver again with the same delivery id until it takes it, and give up at once on a refusal", async () => {
    const flaky = await receiver([500, 503]);
    const refusing = await receiver([400]);
    const announcing = announcer([
      { name: "flaky", url: flaky.url, format: "json" },
      { name: "refusing", url: refusing.url, format: "json" },
    ]);
    announcing.announce(request);
    // Both under way before close(): it aborts a delivery still in flight, and the refusal's would then never arrive.
    await until(() => flaky.deliveries.length === 3 && refusing.deliveries.length === 1, "the third attempt and the refused one");
    expect(new Set(flaky.deliveries.map((delivery) => delivery.headers["x-axon-delivery"])).size).toBe(1);
    // Once the deliveries under way have ended, nothing more arrives.
    await announcing.close();
    expect(flaky.deliveries).toHaveLength(3);
    expect(refusing.deliveries).toHaveLength(1);
  });

  it("are read from a HOCON file whose secrets stay in the environment, and a broken one names the key", async () => {
    const folder = await mkdtemp(path.join(tmpdir(), "axon-webhooks-"));
    cleanups.push(() => rm(folder, { recursive: true, force: true }));
    const file = path.join(folder, "webhooks.hocon");
    await writeFile(file, `slack { url_env: SLACK_URL, format: slack }\nops { url: "https://ops.example.com/axon", secret_env: OPS_SECRET }`);
    expect(await loadApprovalWebhooks(file, { SLACK_URL: "https://hooks.slack.com/services/T/B/x", OPS_SECRET: "k" })).toEqual([
      { name: "slack", url: "https://hooks.slack.com/services/T/B/x", format: "slack" },
      { name: "ops", url: "https://ops.example.com/axon", format: "json", secret: "k" },
    ]);
    await expect(loadApprovalWebhooks(file, { OPS_SECRET: "k" })).rejects.toThrow(/slack\.url_env: the environment variable SLACK_URL is not set/);
    await writeFile(file, `ops { url: "ftp://x", colour: red }`);
    await expect(loadApprovalWebhooks(file, {})).rejects.toThrow(/ops\.colour: unknown field/);
  });
});

const { sqlite } = testDatabases("axon-announce");

describe("what is announced", () => {
  it("every new pending request: a held call with its detail, and a grant asked for ahead", async () => {
    const announced: AnnouncedRequest[] = [];
    const providers = new ProviderRegistry([nativeProvider({ operation: "git.push.force", validateTarget: () => [], present: () => ({ title: "force-push", summary: "s" }) })]);
    const store = operationsStore(await sqlite());
    const broker = new OperationsBroker({ store, policy: defaultPolicy, admission: defaultAdmissionLimits, providers, notifier: new Notifier(), logger: createLogger("silent"), announcer: { announce: (request) => announced.push(request) } });
    const call = { clientId: "alice", operation: "git.push.force", target: { kind: "repo", refs: ["refs/heads/main"] }, detail: { updates: ["main"] }, summary: "force-push main" };
    const abort = new AbortController();
    const holding = broker.native.hold(call, { signal: abort.signal });
    await until(() => announced.length === 1, "the held call's announcement");
    expect(announced[0]).toMatchObject({ grant: { operation: "git.push.force", clientId: "alice" }, operation: { native: true, arguments: { updates: ["main"] } } });
    abort.abort();
    await holding;
    await broker.createGrant("alice", { clientRequestId: "ahead", operation: "git.push.force", target: call.target, reason: "ahead", maxUses: 3 });
    expect(announced).toHaveLength(2);
    expect(announced[1]!.operation).toBeUndefined();
  });
});
