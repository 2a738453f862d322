/** What the standard OTEL_* variables ask of tracing; undefined when traces go nowhere (the SDK then never loads). */
export interface TracingSettings {
  serviceName: string;
  protocol: "http/protobuf" | "http/json";
  /** OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: prompts, completions, tool arguments and results on spans. */
  captureContent: boolean;
}

/**
 * Tracing is on when an OTLP endpoint is named and the SDK is not disabled. The exporter itself reads the endpoint,
 * headers and timeouts, and the SDK the sampler (OTEL_TRACES_SAMPLER / _ARG) and batching (OTEL_BSP_*), as the
 * specification says: one reading of each variable, theirs.
 */
export function tracingSettings(env: NodeJS.ProcessEnv): TracingSettings | undefined {
  if (!tracingRequested(env)) return undefined;
  const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL)?.trim();
  if (protocol !== undefined && protocol !== "" && protocol !== "http/protobuf" && protocol !== "http/json") {
    throw new Error(`OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=${protocol}: Axon exports over http/protobuf or http/json`);
  }
  return {
    serviceName: env.OTEL_SERVICE_NAME?.trim() || "axon",
    protocol: protocol === "http/json" ? "http/json" : "http/protobuf",
    captureContent: env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT?.trim().toLowerCase() === "true",
  };
}

/** Whether the environment asks for traces at all: read where a choice must be made before tracing has started. */
export function tracingRequested(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return false;
  if (env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === "none") return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim());
}
