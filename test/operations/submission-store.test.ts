import { describe, expect, it } from "vitest";
import { admit, defaultAdmissionLimits, windowStartOf, type AdmissionLimits } from "../../src/operations/admission.js";
import { newId } from "../../src/operations/lifecycle.js";
import { operationsStore, type StoreClient } from "../../src/operations/store.js";
import { writeSubmission, type PlannedSubmission } from "../../src/operations/submission-store.js";
import { operationRow } from "../support/operation-rows.js";
import { testDatabases } from "../support/test-databases.js";

const { sqlite, postgres } = testDatabases("axon-submission");

const windowSeconds = 2_147_483_647;
const limits: AdmissionLimits = {
  ...defaultAdmissionLimits,
  requestsPerWindow: 3,
  windowSeconds,
  clientActive: 1000,
  clientPending: 1000,
  globalActive: 1000,
  globalExecuting: 1000,
  clients: {},
};

/** An operation the policy allowed: it will be active, so its write locks the client's load row and the server's. */
function allowed(clientId: string): PlannedSubmission {
  const now = new Date();
  return {
    operation: operationRow(newId("op"), { clientId, idempotencyKey: newId("key"), createdAt: now, updatedAt: now }),
    kind: "operation.approved",
    category: null,
    detail: {},
    limits: { ...limits, windowStart: windowStartOf(now, windowSeconds) },
  };
}

/** As the submission flow does: write until written or refused (a write neither admitted nor refused is tried again). */
async function submit(store: StoreClient, clientId: string): Promise<"created" | "refused"> {
  for (;;) {
    const plan = allowed(clientId);
    const outcome = await writeSubmission(store, plan);
    if (outcome.kind === "created") return "created";
    if (outcome.kind === "not_written" && !admit(limits, clientId, outcome.counts, plan.operation.createdAt, plan.limits.windowStart).admitted) return "refused";
  }
}

describe.each([
  ["SQLite", sqlite],
  ["PostgreSQL", postgres],
])("the submission write on %s", (_name, open) => {
  it("admits each new client's first submissions exactly, racing each other and operations ending, and never deadlocks", async () => {
    const database = await open();
    const { prisma } = database;
    const store = operationsStore(database);
    // Operations ending meanwhile: their counting trigger locks a client's row, then the server's.
    await prisma.operation.createMany({ data: Array.from({ length: 40 }, (_, index) => ({ ...allowed(`ender-${index % 4}`).operation, target: {}, arguments: {} })) });
    const ending = prisma.operation.findMany({ where: { clientId: { startsWith: "ender-" } } }).then((rows) =>
      Promise.all(rows.map((row) => prisma.operation.update({ where: { id: row.id }, data: { state: "canceled", terminalAt: new Date() } }))),
    );
    const clients = Array.from({ length: 8 }, (_, index) => `new-${index}`);
    const outcomes = await Promise.all(clients.flatMap((clientId) => Array.from({ length: 12 }, () => submit(store, clientId).then((outcome) => ({ clientId, outcome })))));
    await ending;

    for (const clientId of clients) {
      expect(outcomes.filter((row) => row.clientId === clientId && row.outcome === "created")).toHaveLength(3);
    }
    expect(await prisma.operation.count({ where: { clientId: { startsWith: "new-" } } })).toBe(3 * clients.length);
    expect((await prisma.globalLoad.findUniqueOrThrow({ where: { id: 1 } })).active).toBe(3 * clients.length);
  });

  it("writes an operation on a window grant only when it took one of the grant's uses, however the grant changed since it was read", async () => {
    const database = await open();
    const store = operationsStore(database);
    const now = new Date();
    await database.prisma.grant.create({
      data: { id: "grant-1", revision: 1, clientId: "alice", status: "active", operation: "http.request", target: {}, reason: "r", mode: "window", minutes: 60, maxUses: 2, usesRemaining: 2, expiresAt: new Date(now.getTime() + 3_600_000) },
    });
    // The client's load row exists (a client's first statement on PostgreSQL only creates it).
    expect(await submit(store, "alice")).toBe("created");
    // Two calls decided on the grant as it stood at revision 1: each goes ahead only on a use it took itself.
    const onGrant = () => ({ ...allowed("alice"), windowGrant: { id: "grant-1", revision: 1 } });
    const outcomes = [(await writeSubmission(store, onGrant())).kind, (await writeSubmission(store, onGrant())).kind];
    expect(outcomes[0]).toBe("created");
    const created = outcomes.filter((kind) => kind === "created").length;
    expect(await database.prisma.operation.count({ where: { clientId: "alice" } })).toBe(1 + created);
    expect(await database.prisma.grant.findUniqueOrThrow({ where: { id: "grant-1" } })).toMatchObject({ usesRemaining: 2 - created, usedCount: created });
  });
});
