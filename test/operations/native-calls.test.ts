import type { JsonObject } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/logger.js";
import { defaultAdmissionLimits } from "../../src/operations/admission.js";
import { OperationsBroker } from "../../src/operations/broker.js";
import type { NativeCall } from "../../src/operations/native-calls.js";
import { Notifier } from "../../src/operations/notifier.js";
import { parsePolicy } from "../../src/operations/policy.js";
import { nativeProvider } from "../../src/operations/providers/native.js";
import { ProviderRegistry } from "../../src/operations/providers/registry.js";
import { operationsStore, type StoreClient } from "../../src/operations/store.js";
import { ExecutionWorker } from "../../src/operations/worker.js";
import type { Database } from "../../src/store/database.js";
import { testDatabases } from "../support/test-databases.js";
import { until, within } from "../support/wait.js";

const { sqlite, postgres, defer } = testDatabases("axon-native-calls");

const policy = {
  files: [],
  rules: parsePolicy(
    {
      rules: [
        { id: "no-main", effect: "deny", operations: ["test.push.*"], targets: [{ refs: ["refs/heads/main"] }] },
        { id: "agent-branches", effect: "allow", operations: ["test.push.fast_forward"], targets: [{ refs: ["refs/heads/agent/*"] }], limits: { body_bytes: 1000 } },
        {
          id: "ask",
          effect: "request",
          operations: ["test.push.*", "test.model"],
          grant_policy: { mode: "window", default_minutes: 60, max_minutes: 600, default_max_uses: 1, max_uses: 10 },
        },
        { id: "ask-once", effect: "request", operations: ["test.tool"] },
      ],
    },
    "native-test-policy",
  ),
};

const providers = () =>
  new ProviderRegistry(
    ["test.push.fast_forward", "test.push.force", "test.model", "test.tool"].map((operation) =>
      nativeProvider({ operation, validateTarget: () => [], present: (target) => ({ title: `${operation} ${JSON.stringify(target)}`, summary: operation }) }),
    ),
  );

/** A replica's broker over the test's database; replicas given one notifier wake each other as PostgreSQL's would. */
function replica(database: Database, replicaId: string, notifier = new Notifier()) {
  const store = operationsStore(database);
  const broker = new OperationsBroker({ store, policy, admission: defaultAdmissionLimits, providers: providers(), notifier, logger: createLogger("silent"), replicaId });
  return { store, broker, notifier };
}

function push(refs: string[], fields: Partial<NativeCall> = {}): NativeCall {
  const target = { kind: "repo", host: "github", owner: "o", name: "r", refs };
  return {
    clientId: "alice",
    operation: "test.push.force",
    target,
    detail: { updates: refs.map((ref) => ({ ref, class: "force" })) },
    summary: `push ${refs.join(", ")}`,
    attributes: { body_bytes: 10 },
    ...fields,
  };
}

async function auditActions(store: StoreClient): Promise<string[]> {
  return (await store.auditRecord.findMany({ orderBy: { id: "asc" } })).map((record) => record.action);
}

async function pendingRequest(store: StoreClient): Promise<string> {
  return until(async () => (await store.grant.findFirst({ where: { status: "pending" } }))?.id, "a pending request");
}

describe.each([
  ["SQLite", sqlite],
  ["PostgreSQL", postgres],
])("native calls on %s", (_name, open) => {
  it("a call the policy allows outright goes ahead with nothing written before it, and its outcome is audited once", async () => {
    const { store, broker } = replica(await open(), "replica_a");
    const call = push(["refs/heads/agent/one"], { operation: "test.push.fast_forward", parts: [{ operation: "test.push.fast_forward", target: push(["refs/heads/agent/one"]).target }] });
    const allowed = await broker.native.hold(call, { signal: new AbortController().signal });
    expect(allowed).toMatchObject({ effect: "allowed", via: { rule: "agent-branches" }, arguments: call.detail });
    expect(await store.operation.count()).toBe(0);
    if (allowed.effect !== "allowed") throw new Error("not allowed");
    await allowed.finish({ ok: true, detail: { status: 200 } });
    await allowed.finish({ ok: false, code: "late", message: "a second outcome changes nothing" });
    await broker.native.flush();
    const records = await store.auditRecord.findMany();
    expect(records.map((record) => record.action)).toEqual(["native.succeeded"]);
    expect(records[0]!.detail).toMatchObject({ operation: "test.push.fast_forward", rule: "agent-branches", outcome: { status: 200 } });
  });

  it("a rule with limits applies only to a call that carries its attributes within them", async () => {
    const { broker } = replica(await open(), "replica_a");
    const small = push(["refs/heads/agent/x"], { operation: "test.push.fast_forward" });
    expect((await broker.native.request(small)).effect).toBe("allowed");
    expect((await broker.native.request({ ...small, attributes: { body_bytes: 1001 } })).effect).toBe("pending");
    const { attributes: _, ...unmeasured } = small;
    expect((await broker.native.request(unmeasured)).effect).toBe("pending");
  });

  it("a deny of any part refuses the whole call at once, naming the rule, and writes only its audit record", async () => {
    const { store, broker } = replica(await open(), "replica_a");
    const refs = ["refs/heads/agent/x", "refs/heads/main"];
    const parts = refs.map((ref) => ({ operation: ref.endsWith("main") ? "test.push.force" : "test.push.fast_forward", target: push([ref]).target }));
    const refused = await broker.native.hold(push(refs, { parts }), { signal: new AbortController().signal });
    expect(refused).toEqual({ effect: "refused", code: "operation_policy_denied", message: "the policy refuses it (rule no-main)", rule: "no-main" });
    await broker.native.flush();
    expect(await store.operation.count()).toBe(0);
    expect(await auditActions(store)).toEqual(["native.denied"]);
  });

  it("a held call waits for an operator: approved, it goes ahead and its operation ends as its upstream answered", async () => {
    const { store, broker } = replica(await open(), "replica_a");
    const heldAs: string[] = [];
    const holding = broker.native.hold(push(["refs/heads/feature"]), { signal: new AbortController().signal, onHeld: (id) => heldAs.push(id) });
    const requestId = await pendingRequest(store);
    const { grant, operation } = await broker.getRequest(requestId);
    expect(operation).toMatchObject({ state: "pending", operation: "test.push.force", arguments: { updates: [{ ref: "refs/heads/feature", class: "force" }] } });
    expect(grant.status).toBe("pending");
    await broker.approve("admin", requestId, { expectedRevision: grant.revision });
    const allowed = await within(10_000, holding, "the held call");
    expect(heldAs).toEqual([requestId]);
    expect(allowed).toMatchObject({ effect: "allowed", via: { approval: requestId } });
    if (allowed.effect !== "allowed") throw new Error("not allowed");
    expect((await store.operation.findUniqueOrThrow({ where: { id: operation!.id } })).state).toBe("executing");
    await allowed.finish({ ok: true, detail: { upstream_status: 200 } });
    expect(await store.operation.findUniqueOrThrow({ where: { id: operation!.id } })).toMatchObject({ state: "succeeded", result: { upstream_status: 200 } });
  });

  it("an operator may edit the arguments of a held call that allows it, and of no other", async () => {
    const { store, broker } = replica(await open(), "replica_a");
    const call: NativeCall = {
      clientId: "alice",
      operation: "test.tool",
      target: { network: "n", agent: "a", tool: "send_email" },
      detail: { arguments: { to: "everyone@example.com" }, allowed_decisions: ["approve", "edit", "reject"] },
      summary: "send_email",
    };
    const holding = broker.native.hold(call, { signal: new AbortController().signal });
    const requestId = await pendingRequest(store);
    await broker.approve("admin", requestId, { expectedRevision: 1, arguments: { to: "me@example.com" } });
    expect(await within(10_000, holding, "the held call")).toMatchObject({
      effect: "allowed",
      arguments: { arguments: { to: "me@example.com" }, allowed_decisions: ["approve", "edit", "reject"] },
    });

    const fixed = broker.native.hold({ ...call, detail: { arguments: { to: "x" }, allowed_decisions: ["approve", "reject"] } }, { signal: new AbortController().signal });
    const fixedId = await until(async () => (await store.grant.findFirst({ where: { status: "pending" } }))?.id, "the second request");
    await expect(broker.approve("admin", fixedId, { expectedRevision: 1, arguments: { to: "y" } })).rejects.toMatchObject({ reason: "ARGUMENTS_NOT_EDITABLE" });
    expect((await broker.getRequest(fixedId)).grant.status).toBe("pending");
    await broker.approve("admin", fixedId, { expectedRevision: 1 });
    expect(await within(10_000, fixed, "the second call")).toMatchObject({ effect: "allowed", arguments: { arguments: { to: "x" } } });
  });

  it("a held call an operator denies is refused with the operator's reason, and nothing of it goes ahead", async () => {
    const { store, broker } = replica(await open(), "replica_a");
    const holding = broker.native.hold(push(["refs/heads/feature"]), { signal: new AbortController().signal });
    const requestId = await pendingRequest(store);
    const { grant } = await broker.getRequest(requestId);
    await broker.deny("admin", requestId, { expectedRevision: grant.revision, reason: "history rewrite refused" });
    expect(await within(10_000, holding, "the held call")).toEqual({
      effect: "refused",
      code: "operation_approval_denied",
      message: "an operator denied the request",
      reason: "history rewrite refused",
    });
  });

  it("the same call arriving again while it waits shares its request; it is withdrawn only when its last waiter leaves", async () => {
    const { store, broker } = replica(await open(), "replica_a");
    const first = new AbortController();
    const second = new AbortController();
    const holdingFirst = broker.native.hold(push(["refs/heads/feature"]), { signal: first.signal });
    const requestId = await pendingRequest(store);
    // Told once it waits (its waiter counted): aborting the first before that would leave it the last waiter.
    const secondHeldAs: string[] = [];
    const holdingSecond = broker.native.hold(push(["refs/heads/feature"]), { signal: second.signal, onHeld: (id) => secondHeldAs.push(id) });
    await until(() => secondHeldAs.length > 0, "the second call waiting");
    expect(secondHeldAs).toEqual([requestId]);
    expect(await store.grant.count()).toBe(1);
    first.abort();
    expect(await within(10_000, holdingFirst, "the first call")).toMatchObject({ effect: "refused", code: "operation_canceled" });
    expect((await broker.getRequest(requestId)).grant.status).toBe("pending");
    second.abort();
    expect(await within(10_000, holdingSecond, "the second call")).toMatchObject({ effect: "refused", code: "operation_canceled" });
    const { grant, operation } = await broker.getRequest(requestId);
    expect([grant.status, operation?.state]).toEqual(["canceled", "canceled"]);
    expect(await store.grant.count()).toBe(1);
  });

  it("a window grant covers the calls on any of its refs, one use each: kept when the upstream accepts, given back when it refuses", async () => {
    const { store, broker } = replica(await open(), "replica_a");
    const target = push(["refs/heads/a", "refs/heads/b"]).target;
    const { grant } = await broker.createGrant("alice", { clientRequestId: "ahead-1", operation: "test.push.force", target, reason: "two pushes", maxUses: 2 });
    await broker.approve("admin", grant.id, { expectedRevision: grant.revision });

    const accepted = await broker.native.hold(push(["refs/heads/b"]), { signal: new AbortController().signal });
    expect(accepted).toMatchObject({ effect: "allowed", via: { grant: grant.id } });
    if (accepted.effect !== "allowed") throw new Error("not allowed");
    await accepted.finish({ ok: true });
    expect(await store.grant.findUniqueOrThrow({ where: { id: grant.id } })).toMatchObject({ usesRemaining: 1, usedCount: 1, status: "active" });

    const refused = await broker.native.hold(push(["refs/heads/a", "refs/heads/b"]), { signal: new AbortController().signal });
    if (refused.effect !== "allowed") throw new Error("not allowed");
    expect(await store.grant.findUniqueOrThrow({ where: { id: grant.id } })).toMatchObject({ usesRemaining: 0, status: "consumed" });
    await refused.finish({ ok: false, code: "upstream_refused", message: "the upstream refused the push" });
    expect(await store.grant.findUniqueOrThrow({ where: { id: grant.id } })).toMatchObject({ usesRemaining: 1, usedCount: 1, status: "active" });

    // A ref the grant was not approved for is not covered: the call waits for an operator.
    const other = new AbortController();
    const holding = broker.native.hold(push(["refs/heads/a", "refs/heads/c"]), { signal: other.signal });
    await pendingRequest(store);
    other.abort();
    expect((await holding).effect).toBe("refused");
    expect((await store.operation.findMany({ orderBy: { createdAt: "asc" } })).map((row) => row.state)).toEqual(["succeeded", "failed", "canceled"]);
  });

  it("a call that cannot wait makes one pending window-grant request, which its approval turns into uses for later calls", async () => {
    const { store, broker } = replica(await open(), "replica_a");
    const call: NativeCall = { clientId: "alice", operation: "test.model", target: { kind: "model", upstream: "hf", name: "Qwen/Qwen3" }, detail: { max_tokens: 10 }, summary: "chat with Qwen/Qwen3" };
    const first = await broker.native.request(call);
    const again = await broker.native.request({ ...call, detail: { max_tokens: 20 } });
    expect(first.effect).toBe("pending");
    expect(again).toEqual(first);
    if (first.effect !== "pending") throw new Error("not pending");
    const { grant, operation } = await broker.getRequest(first.requestId);
    expect(operation).toBeUndefined();
    expect(grant).toMatchObject({ status: "pending", mode: "window", operation: "test.model", target: call.target });
    await broker.approve("admin", first.requestId, { expectedRevision: grant.revision });
    const allowed = await broker.native.request(call);
    expect(allowed).toMatchObject({ effect: "allowed", via: { grant: first.requestId } });
    expect(await store.operation.count()).toBe(1);
  });

  it("a held call is never the worker's: approved, it stays for its route to execute", async () => {
    const database = await open();
    const { store, broker, notifier } = replica(database, "replica_a");
    const worker = new ExecutionWorker({ store, providers: providers(), notifier, logger: createLogger("silent"), clock: { now: () => new Date() }, id: "replica_a" });
    await worker.start();
    defer(() => worker.stop());
    const holding = broker.native.hold(push(["refs/heads/feature"]), { signal: new AbortController().signal });
    const requestId = await pendingRequest(store);
    await broker.approve("admin", requestId, { expectedRevision: (await broker.getRequest(requestId)).grant.revision });
    const allowed = await within(10_000, holding, "the held call");
    expect(allowed.effect).toBe("allowed");
    expect((await broker.getRequest(requestId)).operation).toMatchObject({ state: "executing", claimedBy: "replica_a" });
  });

  it("a call held by a replica that stopped fails once its lease lapses, with its approval, and cannot be approved any more", async () => {
    const database = await open();
    const gone = replica(database, "replica_gone");
    const holding = gone.broker.native.hold(push(["refs/heads/feature"]), { signal: new AbortController().signal });
    const requestId = await pendingRequest(gone.store);

    let now = Date.now();
    const clock = { now: () => new Date(now) };
    const { store, notifier } = replica(database, "replica_live");
    const leaseMs = 10_000;
    const worker = new ExecutionWorker({ store, providers: providers(), notifier, logger: createLogger("silent"), clock, leaseMs, id: "replica_live" });
    await worker.start();
    defer(() => worker.stop());
    now += leaseMs;
    await worker.renewLease();

    const { grant, operation } = await gone.broker.getRequest(requestId);
    expect(operation).toMatchObject({ state: "failed", errorCode: "native_call_interrupted" });
    expect(grant.status).toBe("failed");
    await expect(gone.broker.approve("admin", requestId, { expectedRevision: grant.revision })).rejects.toMatchObject({ reason: "REQUEST_NOT_PENDING" });
    // Had its replica lived on (cut off, say), its waiter would have been told so.
    expect(await within(10_000, holding, "the abandoned call")).toMatchObject({ effect: "refused", code: "native_call_interrupted" });
  });

  it("an agent cannot submit a native operation, nor see it among the operations it may submit", async () => {
    const { broker } = replica(await open(), "replica_a");
    const submit = broker.submit("alice", { idempotencyKey: "k1", operation: "test.push.force", target: push(["refs/heads/x"]).target as JsonObject, arguments: {}, reason: "try" });
    await expect(submit).rejects.toMatchObject({ reason: "NATIVE_OPERATION" });
    expect(providers().submittable()).toEqual([]);
  });
});
