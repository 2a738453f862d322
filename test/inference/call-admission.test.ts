import { describe, expect, it } from "vitest";
import { CallAdmission } from "../../src/inference/call-admission.js";
import { DailyTokens, type DailyTokenStore } from "../../src/inference/daily-tokens.js";
import { AxonError, Code } from "../../src/errors.js";
import { defaultAdmissionLimits, type AdmissionLimits } from "../../src/operations/admission.js";

/** A clock the test moves, and a token store kept in a map: what two replicas sharing a database would see. */
function setting(limits: Partial<AdmissionLimits>, start = "2026-03-01T10:00:30.000Z") {
  let now = new Date(start);
  const clock = { now: () => now };
  const rows = new Map<string, number>();
  const store: DailyTokenStore = {
    read: async (clientId, day) => rows.get(`${clientId}/${day}`) ?? 0,
    add: async (additions) =>
      additions.map(({ clientId, day, tokens }) => {
        const total = (rows.get(`${clientId}/${day}`) ?? 0) + tokens;
        rows.set(`${clientId}/${day}`, total);
        return { clientId, day, tokens: total };
      }),
  };
  const tokens = new DailyTokens(store, clock);
  const admission = new CallAdmission({ ...defaultAdmissionLimits, ...limits }, tokens, clock);
  return { admission, tokens, store, rows, move: (ms: number) => (now = new Date(now.getTime() + ms)) };
}

async function refusal(work: Promise<unknown>): Promise<AxonError> {
  const error = await work.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  if (!(error instanceof AxonError)) throw new Error("expected a refusal");
  return error;
}

describe("admission of chat completions on /v1", () => {
  it("refuses calls past the window's rate until the window ends, Retry-After saying when", async () => {
    const { admission, move } = setting({ inferenceRequestsPerWindow: 2, windowSeconds: 60 });
    (await admission.admit("alice"))();
    (await admission.admit("alice"))();
    const refused = await refusal(admission.admit("alice"));
    expect(refused).toMatchObject({ code: Code.ResourceExhausted, reason: "INFERENCE_RATE_LIMIT", retryAfterSeconds: 30 });
    // Another client has a rate of its own.
    (await admission.admit("bob"))();
    move(30_000);
    (await admission.admit("alice"))();
  });

  it("refuses calls past those in flight until one ends", async () => {
    const { admission } = setting({ inferenceInFlight: 1 });
    const release = await admission.admit("alice");
    expect(await refusal(admission.admit("alice"))).toMatchObject({ reason: "INFERENCE_IN_FLIGHT_LIMIT", retryAfterSeconds: 2 });
    release();
    release();
    const again = await admission.admit("alice");
    expect(await refusal(admission.admit("alice"))).toMatchObject({ reason: "INFERENCE_IN_FLIGHT_LIMIT" });
    again();
  });

  it("refuses a client whose day's tokens are spent until the UTC day ends, and admits it the next day", async () => {
    const { admission, tokens, move } = setting({ clients: { carol: { inferenceTokensPerDay: 100 } } }, "2026-03-01T23:00:00.000Z");
    (await admission.admit("carol"))();
    tokens.add("carol", 100);
    expect(await refusal(admission.admit("carol"))).toMatchObject({ reason: "INFERENCE_TOKEN_BUDGET_SPENT", retryAfterSeconds: 3600, metadata: { limit: "100", used: "100" } });
    // Others have no budget.
    (await admission.admit("alice"))();
    move(3600_000);
    (await admission.admit("carol"))();
  });

  it("counts what another replica spent, read from the shared store when a budgeted call is admitted", async () => {
    const { admission, store } = setting({ inferenceTokensPerDay: 50 });
    (await admission.admit("carol"))();
    await store.add([{ clientId: "carol", day: "2026-03-01", tokens: 60 }]);
    expect(await refusal(admission.admit("carol"))).toMatchObject({ reason: "INFERENCE_TOKEN_BUDGET_SPENT" });
  });
});

describe("the day's tokens", () => {
  it("counts this replica's spending at once, and writes the calls' additions together, after them", async () => {
    const { tokens, rows } = setting({});
    expect(await tokens.usedToday("alice")).toBe(0);
    tokens.add("alice", 40);
    tokens.add("alice", 2);
    tokens.add("bob", 5);
    expect(await tokens.usedToday("alice")).toBe(42);
    expect(rows.size).toBe(0);
    await tokens.flush();
    expect(Object.fromEntries(rows)).toEqual({ "alice/2026-03-01": 42, "bob/2026-03-01": 5 });
    expect(await tokens.usedToday("alice")).toBe(42);
  });

  it("starts each UTC day at zero", async () => {
    const { tokens, move } = setting({}, "2026-03-01T23:59:59.000Z");
    tokens.add("alice", 40);
    await tokens.flush();
    move(2000);
    expect(await tokens.usedToday("alice")).toBe(0);
    expect(tokens.secondsToDayEnd()).toBe(86_399);
  });
});
