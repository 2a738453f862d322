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

  it("counts model calls in the GenAI token and duration histograms, by provider and model, failures by their type", async () => {
    const metrics = new Metrics();
    metrics.llmCall({ provider: "openai", model: "gpt-4o", seconds: 0.5, usage: { inputTokens: 100, outputTokens: 3 } });
    metrics.llmCall({ provider: "openai", model: "gpt-4o", seconds: 0.03, errorType: "429" });
    const text = await metrics.scrape();
    const labels = 'gen_ai_operation_name="chat",gen_ai_provider_name="openai",gen_ai_request_model="gpt-4o"';
    expect(text).toContain("# TYPE gen_ai_client_token_usage histogram\n");
    expect(text).toContain(`gen_ai_client_token_usage_bucket{${labels},gen_ai_token_type="input",le="64"} 0\n`);
    expect(text).toContain(`gen_ai_client_token_usage_bucket{${labels},gen_ai_token_type="input",le="256"} 1\n`);
    expect(text).toContain(`gen_ai_client_token_usage_sum{${labels},gen_ai_token_type="output"} 3\n`);
    expect(text).toContain(`gen_ai_client_operation_duration_seconds_count{${labels}} 1\n`);
    expect(text).toContain(`gen_ai_client_operation_duration_seconds_bucket{${labels},error_type="429",le="0.04"} 1\n`);
    // A failed call used no tokens that anyone reported.
    expect(text).not.toContain('error_type="429",gen_ai_token_type');
  });
});
