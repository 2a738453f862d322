import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/logger.js";
import { openDatabase } from "../../src/store/database.js";
import { Notifier } from "../../src/operations/notifier.js";
import type { ExecutionOutcome, OperationToExecute, Provider } from "../../src/operations/providers/provider.js";
import { ProviderRegistry } from "../../src/operations/providers/registry.js";
import { operationsStore, type StoreClient } from "../../src/operations/store.js";
import { ExecutionWorker } from "../../src/operations/worker.js";
import { operationRow } from "../support/operation-rows.js";
import { adminUrl, createPostgresDatabase, queryPostgres } from "../support/postgres-database.js";
import { testDatabases } from "../support/test-databases.js";
import { until } from "../support/wait.js";

const leaseMs = 10_000;

/** A provider that records what it is asked to execute and to reconcile, and can prove nothing after a crash. */
class RecordingProvider implements Provider {
  readonly operation = "test.op";
  readonly executed: string[] = [];
  readonly reconciled: string[] = [];
  validate = () => [];
  present = () => ({ title: "test", summary: "test" });
  async execute(operation: OperationToExecute): Promise<ExecutionOutcome> {
    this.executed.push(operation.id);
    return { state: "succeeded", result: { ran: operation.id } };
  }
  async reconcile(operation: OperationToExecute): Promise<ExecutionOutcome | "replay" | undefined> {
    this.reconciled.push(operation.id);
    return undefined;
  }
}

const { sqlite, postgres, defer } = testDatabases("axon-worker");

function executing(id: string, claimedBy: string | null) {
  return operationRow(id, { state: "executing", revision: 3, claimedBy });
}

describe.each([
  ["SQLite", sqlite],
  ["PostgreSQL", postgres],
])("replica leases on %s", (_name, open) => {
  /** The workers' clock: it moves only when a test moves it. */
  let now = Date.now();
  const clock = { now: () => new Date(now) };

  async function startWorker(store: StoreClient, provider: RecordingProvider): Promise<ExecutionWorker> {
    const worker = new ExecutionWorker({ store, providers: new ProviderRegistry([provider]), notifier: new Notifier(), logger: createLogger("silent"), clock, leaseMs });
    await worker.start();
    defer(() => worker.stop());
    return worker;
  }

  it("reconciles what a replica with a lapsed lease left executing once it has held its own lease for a whole lease, and leaves a live replica's operations alone", async () => {
    const database = await open();
    const store = operationsStore(database);
    now = Date.now();
    await store.replica.createMany({
      data: [
        { id: "replica_dead", heartbeatAt: new Date(now - 2 * leaseMs) },
        { id: "replica_live", heartbeatAt: new Date(now) },
      ],
    });
    await store.operation.createMany({
      data: [executing("op_dead", "replica_dead"), executing("op_live", "replica_live"), executing("op_unclaimed", null), executing("op_gone", "replica_unknown")],
    });

    const provider = new RecordingProvider();
    const worker = await startWorker(store, provider);
    // Just started: it may follow an outage that left every lease stale, so it gives the others a lease to renew theirs.
    expect(provider.reconciled).toEqual([]);
    expect((await store.operation.findMany({ where: { state: "executing" } })).length).toBe(4);

    // The live replica heartbeats on; a lease later, this one has held its own long enough to judge the others'.
    await store.replica.update({ where: { id: "replica_live" }, data: { heartbeatAt: new Date(now + leaseMs) } });
    now += leaseMs;
    await worker.renewLease();

    const states = Object.fromEntries((await store.operation.findMany()).map((row) => [row.id, row]));
    for (const id of ["op_dead", "op_unclaimed", "op_gone"]) {
      expect(states[id]).toMatchObject({ state: "failed", errorCode: "upstream_result_unknown", claimedBy: worker.id });
    }
    expect(states.op_live).toMatchObject({ state: "executing", claimedBy: "replica_live", revision: 3 });
    expect(provider.reconciled.sort()).toEqual(["op_dead", "op_gone", "op_unclaimed"]);
    expect(provider.executed).toEqual([]); // reconciled, never run again
    // The lapsed replica's row is gone; the live one and this worker's own lease remain.
    expect((await store.replica.findMany()).map((row) => row.id).sort()).toEqual([worker.id, "replica_live"].sort());
  });

  it("replays what a lapsed replica left executing when the provider says the upstream deduplicates it, and records the answer as recovered by replay", async () => {
    const database = await open();
    const store = operationsStore(database);
    now = Date.now();
    await store.replica.create({ data: { id: "replica_dead", heartbeatAt: new Date(now - 2 * leaseMs) } });
    await store.operation.createMany({ data: [executing("op_replayed", "replica_dead"), executing("op_unknown", "replica_dead")] });
    const provider = new RecordingProvider();
    provider.reconcile = async (operation) => {
      provider.reconciled.push(operation.id);
      return operation.id === "op_replayed" ? "replay" : undefined;
    };
    const worker = await startWorker(store, provider);
    now += leaseMs;
    await worker.renewLease();

    const replayed = await until(async () => {
      const row = await store.operation.findUnique({ where: { id: "op_replayed" } });
      return row?.state === "succeeded" ? row : undefined;
    }, "the replay's outcome");
    expect(replayed).toMatchObject({ result: { ran: "op_replayed" }, claimedBy: worker.id });
    expect(provider.executed).toEqual(["op_replayed"]); // sent again once, by the replica that took it over
    expect(await store.operation.findUnique({ where: { id: "op_unknown" } })).toMatchObject({ state: "failed", errorCode: "upstream_result_unknown" });
    const audits = await store.auditRecord.findMany({ where: { operationId: { in: ["op_replayed", "op_unknown"] } }, orderBy: { operationId: "asc" } });
    expect(audits.map((audit) => [audit.operationId, audit.action, audit.detail])).toEqual([
      ["op_replayed", "operation.succeeded", { recovered_by: "replay" }],
      ["op_unknown", "operation.failed", { code: "upstream_result_unknown" }],
    ]);
  });

  it("two workers renewing at once reconcile each orphaned operation exactly once", async () => {
    const database = await open();
    const store = operationsStore(database);
    now = Date.now();
    await store.replica.create({ data: { id: "replica_dead", heartbeatAt: new Date(now - 2 * leaseMs) } });
    const ids = Array.from({ length: 20 }, (_, index) => `op_${index}`);
    await store.operation.createMany({ data: ids.map((id) => executing(id, "replica_dead")) });

    const first = new RecordingProvider();
    const second = new RecordingProvider();
    const workers = await Promise.all([startWorker(store, first), startWorker(store, second)]);
    now += leaseMs;
    await Promise.all(workers.map((worker) => worker.renewLease()));

    expect([...first.reconciled, ...second.reconciled].sort()).toEqual([...ids].sort());
    const audits = await store.auditRecord.findMany({ where: { action: "operation.failed" } });
    expect(audits.map((audit) => audit.operationId).sort()).toEqual([...ids].sort());
  });

  it("hands the waiters on an operation each change as written, the same row a read of it gives", async () => {
    now = Date.now();
    const database = await open();
    const store = operationsStore(database);
    await store.operation.create({ data: operationRow("op_handed", { target: { network: "n" }, arguments: { text: "hi" } }) });
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const provider = new RecordingProvider();
    provider.execute = async (operation) => {
      await released;
      return { state: "succeeded", result: { ran: operation.id, items: [1, "two", null] } };
    };
    const notifier = new Notifier();
    const claimed = notifier.waitForChange("op_handed", 10_000);
    const worker = new ExecutionWorker({ store, providers: new ProviderRegistry([provider]), notifier, logger: createLogger("silent"), clock, leaseMs });
    defer(() => worker.stop());
    await worker.start();

    const executing = await claimed;
    expect(executing).toMatchObject({ state: "executing", revision: 2, claimedBy: worker.id });
    expect(executing).toEqual(await store.operation.findUnique({ where: { id: "op_handed" } }));

    const ended = notifier.waitForChange("op_handed", 10_000);
    release();
    const succeeded = await ended;
    expect(succeeded).toMatchObject({ state: "succeeded", revision: 3, result: { ran: "op_handed", items: [1, "two", null] } });
    expect(succeeded).toEqual(await store.operation.findUnique({ where: { id: "op_handed" } }));
  });

  it("keeps its lease by heartbeat and gives it up on stop", async () => {
    now = Date.now();
    const database = await open();
    const store = operationsStore(database);
    const worker = await startWorker(store, new RecordingProvider());
    const first = await store.replica.findUniqueOrThrow({ where: { id: worker.id } });
    // A heartbeat every third of the lease.
    now += 1000;
    await new Promise((resolve) => setTimeout(resolve, leaseMs / 3 + 500));
    const later = await store.replica.findUniqueOrThrow({ where: { id: worker.id } });
    expect(later.heartbeatAt.getTime()).toBeGreaterThan(first.heartbeatAt.getTime());
    await worker.stop();
    expect(await store.replica.findUnique({ where: { id: worker.id } })).toBeNull();
  });
});

describe("an execution whose outcome PostgreSQL refuses to store", () => {
  it("ends as result_not_recorded instead of staying executing", async () => {
    const database = await postgres();
    const store = operationsStore(database);
    // jsonb cannot hold \u0000 in a string: the upstream answered, but the answer cannot be kept as it is.
    const provider = new RecordingProvider();
    provider.execute = async (operation) => {
      provider.executed.push(operation.id);
      return { state: "succeeded", result: { text: "before\u0000after" } };
    };
    await store.operation.create({ data: { ...executing("op_nul", null), state: "approved", revision: 1 } });
    const worker = new ExecutionWorker({ store, providers: new ProviderRegistry([provider]), notifier: new Notifier(), logger: createLogger("silent"), clock: { now: () => new Date() }, leaseMs });
    await worker.start();
    defer(() => worker.stop());

    const done = await until(async () => {
      const row = await store.operation.findUniqueOrThrow({ where: { id: "op_nul" } });
      return row.state === "executing" || row.state === "approved" ? undefined : row;
    }, "the operation to end");
    expect(done).toMatchObject({ state: "failed", errorCode: "result_not_recorded", result: null });
    expect(provider.executed).toEqual(["op_nul"]);
  });

  it("takes its first lease once the database accepts connections again, and only then claims", async () => {
    const test = await createPostgresDatabase("axon_worker");
    defer(() => test.drop());
    const database = await openDatabase(test.url);
    defer(() => database.close());
    const store = operationsStore(database);
    await store.operation.create({ data: { ...executing("op_after_outage", null), state: "approved", revision: 1 } });
    const refuseConnections = (refuse: boolean) => queryPostgres(adminUrl, `ALTER DATABASE ${test.name} WITH ALLOW_CONNECTIONS ${!refuse}`);
    await refuseConnections(true);
    await queryPostgres(adminUrl, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${test.name}'`);

    const warnings: string[] = [];
    const logger = createLogger("warn", { write: (line: string) => void warnings.push((JSON.parse(line) as { msg: string }).msg) });
    const provider = new RecordingProvider();
    const worker = new ExecutionWorker({ store, providers: new ProviderRegistry([provider]), notifier: new Notifier(), logger, clock: { now: () => new Date() }, leaseMs });
    const started = worker.start();
    defer(() => worker.stop());
    await until(() => warnings.includes("could not take the replica lease; trying again"), "a failed first lease");
    expect(provider.executed).toEqual([]);

    await refuseConnections(false);
    await started;
    const done = await until(async () => {
      const row = await store.operation.findUniqueOrThrow({ where: { id: "op_after_outage" } });
      return row.state === "succeeded" ? row : undefined;
    }, "the operation to be executed");
    expect(done.claimedBy).toBe(worker.id);
    expect(provider.executed).toEqual(["op_after_outage"]);
  });
});
