import { Code } from "@connectrpc/connect";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { Protocol } from "./context.js";

/** The metrics of one route on one protocol, bound to their label values once: a call only counts. */
export interface RouteMetrics {
  finished(code: Code, seconds: number): void;
  streamOpened(): void;
  streamClosed(): void;
}

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

  private readonly routes = new Map<string, RouteMetrics>();

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: "axon_" });
  }

  forRoute(route: string, protocol: Protocol): RouteMetrics {
    const key = `${protocol} ${route}`;
    let bound = this.routes.get(key);
    if (bound === undefined) {
      bound = this.bind(route, protocol);
      this.routes.set(key, bound);
    }
    return bound;
  }

  private bind(route: string, protocol: Protocol): RouteMetrics {
    const latency = this.latency.labels(route, protocol);
    const streams = this.streamsInFlight.labels(route, protocol);
    const byCode = new Map<Code, ReturnType<Counter["labels"]>>();
    return {
      finished: (code, seconds) => {
        let requests = byCode.get(code);
        if (requests === undefined) {
          requests = this.requests.labels(route, protocol, code === okCode ? "OK" : Code[code]);
          byCode.set(code, requests);
        }
        requests.inc();
        latency.observe(seconds);
      },
      streamOpened: () => streams.inc(),
      streamClosed: () => streams.dec(),
    };
  }
}

/** google.rpc.Code OK, which connect's Code enum leaves out. */
export const okCode = 0 as Code;
