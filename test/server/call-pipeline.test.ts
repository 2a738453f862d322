import { createContextKey } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { ConciergeService } from "../../src/gen/neuro_san/api/grpc/concierge_pb.js";
import { createLogger } from "../../src/logger.js";
import { IntakeBudget } from "../../src/server/intake-budget.js";
import { Metrics } from "../../src/server/metrics.js";
import { CallPipeline, CallValues, type Call } from "../../src/server/pipeline/call-pipeline.js";

const pipeline = new CallPipeline({
  logger: createLogger("silent"),
  metrics: new Metrics(),
  authenticate: () => undefined,
  forwardedMetadata: ["request_id"],
  intake: new IntakeBudget(1024),
});
const open = (headers: Record<string, string> = {}) =>
  pipeline.begin({ method: ConciergeService.method.list, protocol: "rest", header: (name) => headers[name] }) as Call;

describe("a call's request id", () => {
  it("is made in the form of a UUID, different for each call, across the 256 calls that share the formatted part", () => {
    const ids = Array.from({ length: 1000 }, () => open().requestId);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(new Set(ids).size).toBe(ids.length);
    // Counted: consecutive ids differ by one.
    const counts = ids.map((id) => parseInt(id.slice(24), 16));
    expect(counts.slice(1).every((count, index) => count === counts[index]! + 1)).toBe(true);
  });

  it("is the client's when it sends one", () => {
    expect(open({ "x-request-id": "from-the-client" }).requestId).toBe("from-the-client");
    expect(open({ request_id: "forwarded", "x-request-id": "other" }).requestId).toBe("forwarded");
  });
});

describe("a call's context values", () => {
  it("answer a key's default until it is set, and again once deleted", () => {
    const key = createContextKey<string | undefined>("fallback");
    const unset = createContextKey<string | undefined>(undefined);
    const values = new CallValues();
    expect(values.get(key)).toBe("fallback");
    expect(values.set(key, undefined).get(key)).toBeUndefined();
    expect(values.set(unset, "set").get(unset)).toBe("set");
    expect(values.delete(key).get(key)).toBe("fallback");
  });
});
