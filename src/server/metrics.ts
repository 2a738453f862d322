import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";

/** Prometheus metrics of one server instance (its own registry, so several servers can share a process). */
export class Metrics {
  readonly registry = new Registry();

  readonly requests = new Counter({
    name: "axon_requests_total",
    help: "Completed requests by route, protocol and status code.",
    labelNames: ["route", "protocol", "code"] as const,
    registers: [this.registry],
  });

  readonly latency = new Histogram({
    name: "axon_request_duration_seconds",
    help: "Time from request to the end of the response (streams: to the last message).",
    labelNames: ["route", "protocol"] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    registers: [this.registry],
  });

  readonly streamsInFlight = new Gauge({
    name: "axon_streams_in_flight",
    help: "Server streams currently open.",
    labelNames: ["route", "protocol"] as const,
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: "axon_" });
  }
}
