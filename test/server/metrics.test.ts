import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { Metrics, okCode } from "../../src/server/metrics.js";

describe("metrics in the Prometheus text format", () => {
  it("counts calls by route, protocol and code, with cumulative latency buckets and streams in flight", async () => {
    const metrics = new Metrics();
    const list = metrics.forRoute("/pkg.Service/List", "grpc");
    list.finished(okCode, 0.0004);
    list.finished(okCode, 0.02);
    list.finished(Code.NotFound, 7);
    const chat = metrics.forRoute("/pkg.Service/Chat", "rest");
    chat.streamOpened();
    chat.streamOpened();
    chat.streamClosed();
    const text = await metrics.scrape();
    const labels = 'route="/pkg.Service/List",protocol="grpc"';
    expect(text).toContain(`axon_requests_total{${labels},code="OK"} 2\n`);
    expect(text).toContain(`axon_requests_total{${labels},code="NotFound"} 1\n`);
    expect(text).toContain(`axon_request_duration_seconds_bucket{${labels},le="0.001"} 1\n`);
    expect(text).toContain(`axon_request_duration_seconds_bucket{${labels},le="0.025"} 2\n`);
    expect(text).toContain(`axon_request_duration_seconds_bucket{${labels},le="5"} 2\n`);
    expect(text).toContain(`axon_request_duration_seconds_bucket{${labels},le="10"} 3\n`);
    expect(text).toContain(`axon_request_duration_seconds_bucket{${labels},le="+Inf"} 3\n`);
    expect(text).toContain(`axon_request_duration_seconds_count{${labels}} 3\n`);
    expect(text).toMatch(new RegExp(`axon_request_duration_seconds_sum\\{${labels.replaceAll(".", "\\.")}\\} 7\\.0204`));
    expect(text).toContain('axon_streams_in_flight{route="/pkg.Service/Chat",protocol="rest"} 1\n');
    expect(text).toContain("# TYPE axon_request_duration_seconds histogram\n");
  });

  it("a call bound twice to the same route and protocol counts in one series", async () => {
    const metrics = new Metrics();
    metrics.forRoute("/pkg.Service/List", "rest").finished(okCode, 0.001);
    metrics.forRoute("/pkg.Service/List", "rest").finished(okCode, 0.001);
    expect(await metrics.scrape()).toContain('axon_requests_total{route="/pkg.Service/List",protocol="rest",code="OK"} 2\n');
  });

  it("adds Node's process metrics, and escapes label values", async () => {
    const metrics = new Metrics();
    metrics.forRoute('/odd"route\\', "connect").finished(okCode, 0.001);
    const text = await metrics.scrape();
    expect(text).toContain('route="/odd\\"route\\\\"');
    expect(text).toMatch(/^axon_process_cpu_user_seconds_total \d/m);
    expect(text).toMatch(/^axon_nodejs_heap_size_used_bytes \d/m);
  });
});
