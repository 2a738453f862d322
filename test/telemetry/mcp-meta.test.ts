import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withTraceMeta } from "../../src/telemetry/mcp-spans.js";
import { startSdk } from "../../src/telemetry/sdk.js";
import { activeTracing } from "../../src/telemetry/tracing.js";
import { OtlpReceiver } from "../support/otlp-receiver.js";

describe("the trace an MCP request carries in params._meta", () => {
  it("is nothing when tracing is off: the caller's _meta goes as it was", () => {
    expect(withTraceMeta()).toBeUndefined();
    expect(withTraceMeta({ progressToken: 7 })).toEqual({ progressToken: 7 });
  });

  describe("with tracing on", () => {
    let receiver: OtlpReceiver;
    let stop: () => Promise<void>;
    beforeAll(async () => {
      receiver = await OtlpReceiver.start();
      // The exporter reads its endpoint from the environment, as in a server.
      process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url;
      stop = startSdk({ serviceName: "meta-test", protocol: "http/json", captureContent: false });
    });
    afterAll(async () => {
      await stop();
      delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
      await receiver.close();
    });

    const inSpan = <T>(work: (traceparent: string) => T): T =>
      activeTracing()!.tracer.startActiveSpan("caller", (span) => {
        const { traceId, spanId } = span.spanContext();
        try {
          return work(`00-${traceId}-${spanId}-01`);
        } finally {
          span.end();
        }
      });

    it("is the active span's traceparent, beside the keys the caller set", () => {
      inSpan((traceparent) => expect(withTraceMeta({ progressToken: 7 })).toEqual({ traceparent, progressToken: 7 }));
    });

    it("never overwrites a key the caller set", () => {
      const own = { traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", tracestate: "caller=1" };
      inSpan(() => expect(withTraceMeta(own)).toEqual(own));
    });

    it("is nothing outside a span", () => {
      expect(withTraceMeta()).toBeUndefined();
    });
  });
});
