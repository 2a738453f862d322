import { Code } from "@connectrpc/connect";
import type { Registry } from "prom-client";
import type { LlmCallRecord } from "../telemetry/llm-calls.js";
import type { Protocol } from "./context.js";

/** The metrics of one route on one protocol, bound to their label values once: a call only adds to numbers. */
export interface RouteMetrics {
  finished(code: Code, seconds: number): void;
  streamOpened(): void;
  streamClosed(): void;
}

/** google.rpc.Code OK, which connect's Code enum leaves out. */
export const okCode = 0 as Code;

const latencyBuckets = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

/** What one route on one protocol has counted: plain numbers, rendered only when scraped. */
class RouteCounters implements RouteMetrics {
  readonly requests = new Map<Code, number>();
  readonly buckets = new Array<number>(latencyBuckets.length).fill(0);
  count = 0;
  sum = 0;
  streams = 0;

  constructor(readonly labels: string) {}

  finished(code: Code, seconds: number): void {
    this.requests.set(code, (this.requests.get(code) ?? 0) + 1);
    this.count++;
    this.sum += seconds;
    let bucket = 0;
    while (bucket < latencyBuckets.length && seconds > latencyBuckets[bucket]!) bucket++;
    if (bucket < latencyBuckets.length) this.buckets[bucket]!++;
  }

  streamOpened(): void {
    this.streams++;
  }

  streamClosed(): void {
    this.streams--;
  }
}

// The GenAI semantic conventions' advised bucket boundaries.
const tokenBuckets = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];
const durationBuckets = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];

/** A histogram by label set, in plain numbers until scraped. */
class Histogram {
  private readonly series = new Map<string, { buckets: number[]; count: number; sum: number }>();

  constructor(
    private readonly name: string,
    private readonly help: string,
    private readonly bounds: number[],
  ) {}

  observe(labels: string, value: number): void {
    let series = this.series.get(labels);
    if (series === undefined) {
      series = { buckets: new Array<number>(this.bounds.length).fill(0), count: 0, sum: 0 };
      this.series.set(labels, series);
    }
    series.count++;
    series.sum += value;
    const bucket = this.bounds.findIndex((bound) => value <= bound);
    if (bucket >= 0) series.buckets[bucket]!++;
  }

  render(): string[] {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`];
    for (const [labels, series] of this.series) {
      let cumulative = 0;
      this.bounds.forEach((bound, index) => {
        cumulative += series.buckets[index]!;
        lines.push(`${this.name}_bucket{${labels},le="${bound}"} ${cumulative}`);
      });
      lines.push(`${this.name}_bucket{${labels},le="+Inf"} ${series.count}`, `${this.name}_sum{${labels}} ${series.sum}`, `${this.name}_count{${labels}} ${series.count}`);
    }
    return lines;
  }
}

/**
 * The Prometheus metrics of one server instance: requests by route, protocol and code, their latency, and the streams
 * in flight, counted in plain numbers on every call and rendered as text when scraped; then Node's process metrics
 * (prom-client's defaults, in the instance's own registry), which load on the first scrape rather than at start-up.
 */
export class Metrics {
  readonly contentType = "text/plain; version=0.0.4; charset=utf-8";
  private readonly routes = new Map<string, RouteCounters>();
  private processMetrics: Promise<Registry> | undefined;
  // gen_ai.client.token.usage and gen_ai.client.operation.duration, named as Prometheus exports OpenTelemetry metrics.
  private readonly tokenUsage = new Histogram("gen_ai_client_token_usage", "Tokens used per model call, by provider, model and token type.", tokenBuckets);
  private readonly llmDuration = new Histogram("gen_ai_client_operation_duration_seconds", "Time of each model call, by provider and model.", durationBuckets);
  private readonly inferenceCalls = new Map<string, number>();
  private readonly inferenceTokens = new Map<string, number>();

  /** Counts one model call (in whichever thread it ran). */
  llmCall(record: LlmCallRecord): void {
    const labels = `gen_ai_operation_name="chat",gen_ai_provider_name="${escapeLabel(record.provider)}",gen_ai_request_model="${escapeLabel(record.model)}"`;
    this.llmDuration.observe(record.errorType === undefined ? labels : `${labels},error_type="${escapeLabel(record.errorType)}"`, record.seconds);
    if (record.usage === undefined) return;
    this.tokenUsage.observe(`${labels},gen_ai_token_type="input"`, record.usage.inputTokens);
    this.tokenUsage.observe(`${labels},gen_ai_token_type="output"`, record.usage.outputTokens);
  }

  /** Counts one chat completion on `/v1` and the tokens it used, by client and model (a brokered model or `axon/<network>`). */
  inferenceCall(record: { client: string; model: string; status: number; promptTokens: number; completionTokens: number }): void {
    const labels = `client="${escapeLabel(record.client)}",model="${escapeLabel(record.model)}"`;
    const calls = `${labels},status="${record.status}"`;
    this.inferenceCalls.set(calls, (this.inferenceCalls.get(calls) ?? 0) + 1);
    for (const [type, tokens] of [["input", record.promptTokens], ["output", record.completionTokens]] as const) {
      if (tokens <= 0) continue;
      const series = `${labels},type="${type}"`;
      this.inferenceTokens.set(series, (this.inferenceTokens.get(series) ?? 0) + tokens);
    }
  }

  forRoute(route: string, protocol: Protocol): RouteMetrics {
    const labels = `route="${escapeLabel(route)}",protocol="${protocol}"`;
    let counters = this.routes.get(labels);
    if (counters === undefined) {
      counters = new RouteCounters(labels);
      this.routes.set(labels, counters);
    }
    return counters;
  }

  /** The text exposition format. */
  async scrape(): Promise<string> {
    const requests = ["# HELP axon_requests_total Completed requests by route, protocol and status code.", "# TYPE axon_requests_total counter"];
    const latency = [
      "# HELP axon_request_duration_seconds Time from request to the end of the response (streams: to the last message).",
      "# TYPE axon_request_duration_seconds histogram",
    ];
    const streams = ["# HELP axon_streams_in_flight Server streams currently open.", "# TYPE axon_streams_in_flight gauge"];
    for (const route of this.routes.values()) {
      for (const [code, total] of route.requests) requests.push(`axon_requests_total{${route.labels},code="${code === okCode ? "OK" : Code[code]}"} ${total}`);
      let cumulative = 0;
      latencyBuckets.forEach((bound, index) => {
        cumulative += route.buckets[index]!;
        latency.push(`axon_request_duration_seconds_bucket{${route.labels},le="${bound}"} ${cumulative}`);
      });
      latency.push(
        `axon_request_duration_seconds_bucket{${route.labels},le="+Inf"} ${route.count}`,
        `axon_request_duration_seconds_sum{${route.labels}} ${route.sum}`,
        `axon_request_duration_seconds_count{${route.labels}} ${route.count}`,
      );
      streams.push(`axon_streams_in_flight{${route.labels}} ${route.streams}`);
    }
    // prom-client is CommonJS: inside the build's bundle its chunk exports only `default` (module.exports), which Node's
    // own loader also offers, so that is the one name both read.
    this.processMetrics ??= import("prom-client").then(({ default: { Registry, collectDefaultMetrics } }) => {
      const registry = new Registry();
      collectDefaultMetrics({ register: registry, prefix: "axon_" });
      return registry;
    });
    const process = await (await this.processMetrics).metrics();
    const inference = [
      "# HELP axon_inference_requests_total Chat completions on /v1 by client, model and HTTP status.",
      "# TYPE axon_inference_requests_total counter",
      ...[...this.inferenceCalls].map(([labels, total]) => `axon_inference_requests_total{${labels}} ${total}`),
      "# HELP axon_inference_tokens_total Tokens used by chat completions on /v1, by client, model and type (input, output).",
      "# TYPE axon_inference_tokens_total counter",
      ...[...this.inferenceTokens].map(([labels, total]) => `axon_inference_tokens_total{${labels}} ${total}`),
    ];
    return `${[...requests, ...latency, ...streams, ...this.tokenUsage.render(), ...this.llmDuration.render(), ...inference].join("\n")}\n\n${process}`;
  }
}

// Prometheus label values escape backslash, double quote and newline.
function escapeLabel(value: string): string {
  return value.replace(/[\\"\n]/g, (char) => (char === "\n" ? "\\n" : `\\${char}`));
}
