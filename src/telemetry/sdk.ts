import { trace } from "@opentelemetry/api";
import { OTLPTraceExporter as JsonExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as ProtobufExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { propagateOnFetch } from "./outgoing-propagation.js";
import type { TracingSettings } from "./settings.js";
import { setActiveTracing } from "./tracing.js";

/**
 * The Node trace SDK, registered globally: AsyncLocalStorage carries the active span through awaits, W3C trace context
 * and baggage are the propagators, and spans leave in batches over OTLP/HTTP. The exporter reads the endpoint and
 * headers, the provider the sampler, from the environment.
 */
export function startSdk(settings: TracingSettings): () => Promise<void> {
  const exporter = settings.protocol === "http/json" ? new JsonExporter() : new ProtobufExporter();
  const resource = defaultResource()
    .merge(detectResources({ detectors: [envDetector] }))
    .merge(resourceFromAttributes({ "service.name": settings.serviceName }));
  const provider = new NodeTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(exporter)] });
  provider.register();
  const stopPropagating = propagateOnFetch();
  setActiveTracing({ tracer: trace.getTracer("axon"), settings, flush: () => provider.forceFlush() });
  return async () => {
    setActiveTracing(undefined);
    stopPropagating();
    await provider.shutdown();
  };
}
