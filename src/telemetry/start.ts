import { tracingSettings } from "./settings.js";

/**
 * Starts tracing in this thread (the server's and the chat thread each export their own spans) when the OTEL_*
 * variables name an endpoint; otherwise loads nothing. Resolves to what flushes and stops it.
 */
export async function startTracing(env: NodeJS.ProcessEnv): Promise<() => Promise<void>> {
  const settings = tracingSettings(env);
  if (settings === undefined) return async () => undefined;
  // The SDK and its exporters are a chunk of their own in the build: a server without tracing never reads them.
  const { startSdk } = await import("./sdk.js");
  return startSdk(settings);
}
