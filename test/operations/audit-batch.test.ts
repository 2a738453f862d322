import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/logger.js";
import { AuditBatch } from "../../src/operations/audit-batch.js";
import { operationsStore } from "../../src/operations/store.js";
import type { Database } from "../../src/store/database.js";
import { testDatabases } from "../support/test-databases.js";

const { sqlite, postgres } = testDatabases("axon-audit-batch");

describe.each([
  ["SQLite", sqlite],
  ["PostgreSQL", postgres],
])("audit records batched on %s", (_, open: () => Promise<Database>) => {
  it("writes every record added, in one statement, as it was given", async () => {
    const database = await open();
    const batch = new AuditBatch({ store: operationsStore(database), logger: createLogger("silent") });
    batch.add({ actor: "alice", actorKind: "client", action: "native.succeeded", detail: { operation: "inference.chat", outcome: { total_tokens: 5 } } });
    batch.add({ actor: "bob", actorKind: "client", action: "native.denied", category: "authorization", operationId: null, grantId: "req_1", detail: { rule: "no" } });
    await batch.flush();
    const rows = await database.prisma.auditRecord.findMany({ orderBy: { id: "asc" } });
    expect(rows.map(({ actor, actorKind, action, category, operationId, grantId, detail }) => ({ actor, actorKind, action, category, operationId, grantId, detail }))).toEqual([
      { actor: "alice", actorKind: "client", action: "native.succeeded", category: null, operationId: null, grantId: null, detail: { operation: "inference.chat", outcome: { total_tokens: 5 } } },
      { actor: "bob", actorKind: "client", action: "native.denied", category: "authorization", operationId: null, grantId: "req_1", detail: { rule: "no" } },
    ]);
    expect(rows.every((row) => row.at instanceof Date)).toBe(true);
  });
});
