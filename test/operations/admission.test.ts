import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { AxonError, Code } from "../../src/errors.js";
import {
  AdmissionFileError,
  admissionError,
  admit,
  defaultAdmissionLimits,
  inferenceLimitsFor,
  limitsFor,
  loadAdmissionLimits,
  parseAdmissionLimits,
  windowStartOf,
  type AdmissionCounts,
  type AdmissionLimits,
  type AdmissionRefusal,
} from "../../src/operations/admission.js";

let folder: string;
beforeAll(async () => {
  folder = await mkdtemp(path.join(tmpdir(), "axon-admission-"));
});
afterAll(async () => {
  await rm(folder, { recursive: true, force: true });
});

const idle: AdmissionCounts = { clientRequestsInWindow: 0, clientActive: 0, clientPending: 0, globalActive: 0, globalExecuting: 0 };
const now = new Date("2025-03-01T10:00:45.250Z");
const windowStart = windowStartOf(now, 60);

function refusal(limits: AdmissionLimits, counts: Partial<AdmissionCounts>, clientId = "alice"): AdmissionRefusal {
  const admission = admit(limits, clientId, { ...idle, ...counts }, now, windowStart);
  if (admission.admitted) throw new Error("expected a refusal");
  return admission;
}

describe("admission defaults", () => {
  it("are 60 submissions per 60 s, 25 active and 10 pending per client, 512 active and 64 executing globally", async () => {
    expect(await loadAdmissionLimits()).toEqual({
      requestsPerWindow: 60,
      windowSeconds: 60,
      clientActive: 25,
      clientPending: 10,
      globalActive: 512,
      globalExecuting: 64,
      inferenceRequestsPerWindow: 600,
      inferenceInFlight: 16,
      inferenceTokensPerDay: Number.POSITIVE_INFINITY,
      clients: {},
    });
  });

  it("hold chat completions on /v1 to 600 per window and 16 at once per client, with no daily token budget", () => {
    expect(inferenceLimitsFor(defaultAdmissionLimits, "alice")).toEqual({
      inferenceRequestsPerWindow: 600,
      inferenceInFlight: 16,
      inferenceTokensPerDay: Number.POSITIVE_INFINITY,
      windowSeconds: 60,
    });
  });

  it("admit an idle client", () => {
    expect(admit(defaultAdmissionLimits, "alice", idle, now, windowStart)).toEqual({ admitted: true });
  });

  it("admit a client one below every limit", () => {
    const counts = { clientRequestsInWindow: 59, clientActive: 24, clientPending: 9, globalActive: 511, globalExecuting: 63 };
    expect(admit(defaultAdmissionLimits, "alice", counts, now, windowStart)).toEqual({ admitted: true });
  });
});

describe("each limit refuses once it is reached", () => {
  it("the submission rate: Retry-After is the seconds to the window's end, rounded up", () => {
    expect(refusal(defaultAdmissionLimits, { clientRequestsInWindow: 60 })).toEqual({
      admitted: false,
      reason: "CLIENT_RATE_LIMIT",
      retryAfterSeconds: 15, // 10:00:45.250 -> 10:01:00
      limit: 60,
      used: 60,
      scope: "client",
      clientId: "alice",
      windowSeconds: 60,
    });
  });

  it("the rate's Retry-After is at least one second, even at the window's last instant", () => {
    const last = new Date("2025-03-01T10:00:59.999Z");
    const admission = admit(defaultAdmissionLimits, "alice", { ...idle, clientRequestsInWindow: 60 }, last, windowStartOf(last, 60));
    expect(admission).toMatchObject({ reason: "CLIENT_RATE_LIMIT", retryAfterSeconds: 1 });
  });

  it("the client's active operations, Retry-After 2", () => {
    expect(refusal(defaultAdmissionLimits, { clientActive: 25 })).toMatchObject({ reason: "CLIENT_OPERATION_LIMIT", retryAfterSeconds: 2, limit: 25, used: 25, scope: "client" });
  });

  it("the client's pending approvals, Retry-After 2: every new submission is refused while it is reached", () => {
    expect(refusal(defaultAdmissionLimits, { clientPending: 10 })).toMatchObject({ reason: "CLIENT_PENDING_LIMIT", retryAfterSeconds: 2, limit: 10, used: 10 });
    expect(refusal(defaultAdmissionLimits, { clientPending: 12 })).toMatchObject({ reason: "CLIENT_PENDING_LIMIT", used: 12 });
  });

  it("the server's active operations, Retry-After 2", () => {
    expect(refusal(defaultAdmissionLimits, { globalActive: 512 })).toMatchObject({ reason: "GLOBAL_OPERATION_LIMIT", retryAfterSeconds: 2, limit: 512, scope: "global" });
  });

  it("the server's executing operations, Retry-After 2", () => {
    expect(refusal(defaultAdmissionLimits, { globalExecuting: 64 })).toMatchObject({ reason: "GLOBAL_EXECUTING_LIMIT", retryAfterSeconds: 2, limit: 64, scope: "global" });
  });

  it("a limit of 0 refuses every submission", () => {
    expect(refusal({ ...defaultAdmissionLimits, globalExecuting: 0 }, {})).toMatchObject({ reason: "GLOBAL_EXECUTING_LIMIT" });
  });
});

describe("the order of the checks", () => {
  const everythingFull = { clientRequestsInWindow: 60, clientActive: 25, clientPending: 10, globalActive: 512, globalExecuting: 64 };

  it("is rate, client active, client pending, global active, global executing: the first reached limit is reported", () => {
    const reasons: string[] = [];
    const counts: AdmissionCounts = { ...everythingFull };
    for (const field of ["clientRequestsInWindow", "clientActive", "clientPending", "globalActive", "globalExecuting"] as const) {
      reasons.push(refusal(defaultAdmissionLimits, counts).reason);
      counts[field] = 0;
    }
    expect(reasons).toEqual(["CLIENT_RATE_LIMIT", "CLIENT_OPERATION_LIMIT", "CLIENT_PENDING_LIMIT", "GLOBAL_OPERATION_LIMIT", "GLOBAL_EXECUTING_LIMIT"]);
    expect(admit(defaultAdmissionLimits, "alice", counts, now, windowStart)).toEqual({ admitted: true });
  });
});

describe("per-client overrides", () => {
  const limits: AdmissionLimits = {
    ...defaultAdmissionLimits,
    clients: { batch: { requestsPerWindow: 600, clientActive: 100 }, slow: { requestsPerWindow: 5, windowSeconds: 3600 } },
  };

  it("raise or lower only the limits they name", () => {
    expect(limitsFor(limits, "batch")).toEqual({ ...limitsFor(defaultAdmissionLimits, "x"), requestsPerWindow: 600, clientActive: 100 });
    expect(admit(limits, "batch", { ...idle, clientRequestsInWindow: 300, clientActive: 50 }, now, windowStart)).toEqual({ admitted: true });
    expect(refusal(limits, { clientPending: 10 }, "batch")).toMatchObject({ reason: "CLIENT_PENDING_LIMIT", limit: 10 });
  });

  it("do not apply to other clients", () => {
    expect(refusal(limits, { clientRequestsInWindow: 60 }, "alice")).toMatchObject({ reason: "CLIENT_RATE_LIMIT", limit: 60 });
  });

  it("may set the client's own window, and Retry-After follows it", () => {
    const slowStart = windowStartOf(now, 3600);
    expect(slowStart.toISOString()).toBe("2025-03-01T10:00:00.000Z");
    const admission = admit(limits, "slow", { ...idle, clientRequestsInWindow: 5 }, now, slowStart);
    expect(admission).toMatchObject({ reason: "CLIENT_RATE_LIMIT", limit: 5, windowSeconds: 3600, retryAfterSeconds: 3555 });
  });

  it("a client named like an Object.prototype member gets the defaults", () => {
    expect(limitsFor(limits, "constructor")).toEqual(limitsFor(defaultAdmissionLimits, "x"));
    expect(limitsFor(limits, "toString").requestsPerWindow).toBe(60);
  });
});

describe("windows", () => {
  it("start at multiples of the window length since the epoch", () => {
    expect(windowStartOf(new Date("2025-03-01T10:00:45.250Z"), 60).toISOString()).toBe("2025-03-01T10:00:00.000Z");
    expect(windowStartOf(new Date("2025-03-01T10:01:00.000Z"), 60).toISOString()).toBe("2025-03-01T10:01:00.000Z");
    expect(windowStartOf(new Date("2025-03-01T10:07:12.000Z"), 300).toISOString()).toBe("2025-03-01T10:05:00.000Z");
  });
});

describe("the error a refusal becomes", () => {
  it("is RESOURCE_EXHAUSTED with the reason, category rate_limited, the limit and Retry-After", () => {
    const error = admissionError(refusal(defaultAdmissionLimits, { clientRequestsInWindow: 61 }));
    expect(error).toBeInstanceOf(AxonError);
    expect(error.code).toBe(Code.ResourceExhausted);
    expect(error.reason).toBe("CLIENT_RATE_LIMIT");
    expect(error.metadata).toEqual({ category: "rate_limited", limit: "60", used: "61", retry_after_seconds: "15", scope: "client", window_seconds: "60" });
    expect(error.retryAfterSeconds).toBe(15);
    expect(error.quotaViolations).toEqual([{ subject: "client:alice", description: "at most 60 submissions per 60 seconds" }]);
  });

  it("of a capacity limit carries Retry-After 2", () => {
    const error = admissionError(refusal(defaultAdmissionLimits, { clientActive: 25 }));
    expect(error.reason).toBe("CLIENT_OPERATION_LIMIT");
    expect(error.retryAfterSeconds).toBe(2);
    expect(error.metadata.retry_after_seconds).toBe("2");
  });

  it("of a global limit names the server, not the client, and hides the server's load", () => {
    const error = admissionError(refusal(defaultAdmissionLimits, { globalActive: 600 }));
    expect(error.metadata).toEqual({ category: "rate_limited", limit: "512", retry_after_seconds: "2", scope: "global" });
    expect(error.quotaViolations).toEqual([{ subject: "global", description: "at most 512 active operations on the server" }]);
  });

  it("has a message a gRPC status can carry unescaped", () => {
    for (const counts of [{ clientRequestsInWindow: 60 }, { clientActive: 25 }, { clientPending: 10 }, { globalActive: 512 }, { globalExecuting: 64 }]) {
      expect(admissionError(refusal(defaultAdmissionLimits, counts)).message).toMatch(/^[a-z ]+$/);
    }
  });
});

describe("loading the admission file", () => {
  async function file(name: string, text: string): Promise<string> {
    const written = path.join(folder, name);
    await writeFile(written, text);
    return written;
  }

  it("overrides only the limits it names", async () => {
    const limits = await loadAdmissionLimits(await file("partial.json", '{"client_active": 5, "global_executing": 8}'));
    expect(limits).toEqual({ ...defaultAdmissionLimits, clientActive: 5, globalExecuting: 8, clients: {} });
  });

  it("reads every key and per-client overrides", async () => {
    const text = JSON.stringify({
      requests_per_window: 120,
      window_seconds: 30,
      client_active: 40,
      client_pending: 4,
      global_active: 1000,
      global_executing: 100,
      inference_requests_per_window: 300,
      inference_in_flight: 8,
      inference_tokens_per_day: 1_000_000,
      clients: {
        "ci-bot": { requests_per_window: 1000, window_seconds: 600, client_active: 200, client_pending: 0, inference_in_flight: 2, inference_tokens_per_day: 5000 },
      },
    });
    const limits = await loadAdmissionLimits(await file("full.json", text));
    expect(limits).toEqual({
      requestsPerWindow: 120,
      windowSeconds: 30,
      clientActive: 40,
      clientPending: 4,
      globalActive: 1000,
      globalExecuting: 100,
      inferenceRequestsPerWindow: 300,
      inferenceInFlight: 8,
      inferenceTokensPerDay: 1_000_000,
      clients: {
        "ci-bot": { requestsPerWindow: 1000, windowSeconds: 600, clientActive: 200, clientPending: 0, inferenceInFlight: 2, inferenceTokensPerDay: 5000 },
      },
    });
    expect(inferenceLimitsFor(limits, "ci-bot")).toEqual({ inferenceRequestsPerWindow: 300, inferenceInFlight: 2, inferenceTokensPerDay: 5000, windowSeconds: 600 });
  });

  it("a missing file is an error naming the file", async () => {
    const missing = path.join(folder, "missing.json");
    await expect(loadAdmissionLimits(missing)).rejects.toThrow(AdmissionFileError);
    await expect(loadAdmissionLimits(missing)).rejects.toThrow(missing);
  });

  it("malformed JSON is an error naming the file", async () => {
    const broken = await file("broken.json", '{"client_active": ');
    await expect(loadAdmissionLimits(broken)).rejects.toThrow(AdmissionFileError);
  });

  const invalid: [string, unknown, string][] = [
    ["an unknown key", { client_actives: 3 }, "client_actives"],
    ["a negative limit", { client_active: -1 }, "client_active"],
    ["a fractional limit", { global_active: 1.5 }, "global_active"],
    ["a string limit", { requests_per_window: "60" }, "requests_per_window"],
    ["a zero window", { window_seconds: 0 }, "window_seconds"],
    ["clients that is not an object", { clients: [] }, "clients"],
    ["an invalid client name", { clients: { "-bad": {} } }, "clients.-bad"],
    ["a global limit set per client", { clients: { alice: { global_active: 3 } } }, "clients.alice.global_active"],
    ["an unknown per-client key", { clients: { alice: { burst: 3 } } }, "clients.alice.burst"],
    ["a bad per-client value", { clients: { alice: { client_pending: -2 } } }, "clients.alice.client_pending"],
  ];
  it.each(invalid)("refuses %s, naming the file and the key", (_what, document, key) => {
    let thrown: unknown;
    try {
      parseAdmissionLimits(document, "/etc/axon/admission.json");
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(AdmissionFileError);
    expect((thrown as AdmissionFileError).key).toBe(key);
    expect((thrown as Error).message).toContain("/etc/axon/admission.json");
  });
});
