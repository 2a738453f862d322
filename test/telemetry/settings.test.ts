import { describe, expect, it } from "vitest";
import { tracingRequested, tracingSettings } from "../../src/telemetry/settings.js";

describe("tracing settings from the OTEL_* variables", () => {
  it("without an endpoint there is no tracing at all", () => {
    expect(tracingRequested({})).toBe(false);
    expect(tracingSettings({ OTEL_SERVICE_NAME: "x", OTEL_TRACES_SAMPLER: "always_on" })).toBeUndefined();
  });

  it("an endpoint turns it on with http/protobuf, service axon and no message content by default", () => {
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })).toEqual({ serviceName: "axon", protocol: "http/protobuf", captureContent: false });
    expect(
      tracingSettings({
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://collector:4318/v1/traces",
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/json",
        OTEL_SERVICE_NAME: "agents-eu",
        OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "TRUE",
      }),
    ).toEqual({ serviceName: "agents-eu", protocol: "http/json", captureContent: true });
  });

  it("OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none win over an endpoint", () => {
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_SDK_DISABLED: "true" })).toBeUndefined();
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_TRACES_EXPORTER: "none" })).toBeUndefined();
  });

  it("a protocol Axon cannot export over is refused at start, by name", () => {
    expect(() => tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4317", OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "grpc" })).toThrow(/grpc.*http\/protobuf or http\/json/);
  });
});
