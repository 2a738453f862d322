import { describe, expect, it } from "vitest";
import type { PrismaClient } from "../../src/store/database.js";
import { operationRow } from "../support/operation-rows.js";
import { testDatabases } from "../support/test-databases.js";

const { sqlite, postgres } = testDatabases("axon-load");

const active = ["pending", "approved", "executing"];

function operation(id: string, clientId: string, state: string) {
  return operationRow(id, { clientId, state });
}

function grant(id: string, clientId: string, status: string) {
  return { id, revision: 1, clientId, status, operation: "test.op", target: {}, reason: "test", mode: "execution" };
}

/** The load rows, and the same counts taken from the operations and grants themselves. */
async function countsBothWays(prisma: PrismaClient) {
  const operations = await prisma.operation.findMany({ where: { state: { in: active } } });
  const grants = await prisma.grant.findMany({ where: { status: "pending" } });
  const fromRows: Record<string, { active: number; pending: number }> = {};
  const of = (clientId: string) => (fromRows[clientId] ??= { active: 0, pending: 0 });
  for (const row of operations) of(row.clientId).active++;
  for (const row of grants) of(row.clientId).pending++;

  const fromLoad: Record<string, { active: number; pending: number }> = {};
  for (const row of await prisma.clientLoad.findMany()) {
    if (row.active !== 0 || row.pending !== 0) fromLoad[row.clientId] = { active: row.active, pending: row.pending };
  }
  const global = await prisma.globalLoad.findUniqueOrThrow({ where: { id: 1 } });
  return { fromLoad: { clients: fromLoad, active: global.active }, fromRows: { clients: fromRows, active: operations.length } };
}

describe.each([
  ["SQLite", sqlite],
  ["PostgreSQL", postgres],
])("the load counts on %s", (_name, open) => {
  it("equal the active operations and pending approvals, per client and in all, through every insert, state change and delete", async () => {
    const { prisma } = await open();
    const same = async () => {
      const { fromLoad, fromRows } = await countsBothWays(prisma);
      expect(fromLoad).toEqual(fromRows);
    };
    await same();

    await prisma.operation.createMany({
      data: [
        operation("op_1", "alice", "pending"),
        operation("op_2", "alice", "approved"),
        operation("op_3", "bob", "executing"),
        operation("op_4", "bob", "denied"),
      ],
    });
    await prisma.grant.createMany({ data: [grant("req_1", "alice", "pending"), grant("req_2", "carol", "active")] });
    await same();

    // Along the lifecycle: into executing (no change), then out of the active states, and a grant decided.
    await prisma.operation.update({ where: { id: "op_2" }, data: { state: "executing" } });
    await prisma.operation.update({ where: { id: "op_3" }, data: { state: "succeeded" } });
    await prisma.operation.updateMany({ where: { clientId: "alice", state: "pending" }, data: { state: "canceled" } });
    await prisma.grant.update({ where: { id: "req_1" }, data: { status: "canceled" } });
    await prisma.grant.update({ where: { id: "req_2" }, data: { status: "revoked" } });
    await same();

    // Changes that do not touch the state or status count nothing; deletes count as leaving.
    await prisma.operation.update({ where: { id: "op_2" }, data: { presentationSummary: "progress", revision: 2 } });
    await prisma.grant.create({ data: grant("req_3", "dave", "pending") });
    await prisma.operation.create({ data: operation("op_5", "dave", "pending") });
    await same();
    await prisma.operation.delete({ where: { id: "op_2" } });
    await prisma.grant.delete({ where: { id: "req_3" } });
    await same();
    expect((await countsBothWays(prisma)).fromLoad).toEqual({ clients: { dave: { active: 1, pending: 0 } }, active: 1 });
  });
});
