import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAxonProcess, type AxonProcess } from "../support/axon-process.js";

// The server `npm start` runs is the esbuild bundle, not the sources tsx runs: a bundling change once broke /metrics
// there (prom-client's import) while every in-process test passed.
describe("/metrics on the built server", () => {
  let axon: AxonProcess;
  beforeAll(async () => {
    axon = await startAxonProcess({});
  });
  afterAll(async () => {
    await axon?.stop();
  });

  it("answers the request counters and Node's process metrics in the Prometheus text format", async () => {
    expect((await fetch(`${axon.url}/api/v1/list`)).status).toBe(200);
    const response = await fetch(`${axon.url}/metrics`);
    const text = await response.text();
    expect(response.status, text).toBe(200);
    expect(response.headers.get("content-type")).toContain("text/plain");
    expect(text).toMatch(/axon_requests_total\{route="[^"]*ConciergeService\/List",protocol="rest",code="OK"\} 1\n/);
    expect(text).toMatch(/^axon_process_cpu_user_seconds_total \d/m);
    expect(text).toMatch(/^axon_nodejs_heap_size_used_bytes \d/m);
  });
});
