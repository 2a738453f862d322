import { describe, expect, it } from "vitest";
import { databaseTokenStore } from "../../src/inference/daily-tokens.js";
import type { Database } from "../../src/store/database.js";
import { testDatabases } from "../support/test-databases.js";

const { sqlite, postgres } = testDatabases("axon-daily-tokens");

describe.each([
  ["SQLite", sqlite],
  ["PostgreSQL", postgres],
])("each client's tokens per day on %s", (_, open: () => Promise<Database>) => {
  it("adds many clients' tokens in one statement and answers the new totals; a day not written is 0", async () => {
    const store = databaseTokenStore(await open());
    expect(await store.read("alice", "2026-03-01")).toBe(0);
    expect(await store.add([{ clientId: "alice", day: "2026-03-01", tokens: 30 }])).toEqual([{ clientId: "alice", day: "2026-03-01", tokens: 30 }]);
    const totals = await store.add([
      { clientId: "alice", day: "2026-03-01", tokens: 12 },
      { clientId: "bob", day: "2026-03-01", tokens: 5 },
      { clientId: "alice", day: "2026-03-02", tokens: 3_000_000_000 },
    ]);
    expect(totals.sort((a, b) => (a.clientId + a.day < b.clientId + b.day ? -1 : 1))).toEqual([
      { clientId: "alice", day: "2026-03-01", tokens: 42 },
      { clientId: "alice", day: "2026-03-02", tokens: 3_000_000_000 },
      { clientId: "bob", day: "2026-03-01", tokens: 5 },
    ]);
    expect(await store.read("alice", "2026-03-01")).toBe(42);
    expect(await store.read("alice", "2026-03-02")).toBe(3_000_000_000);
  });
});
