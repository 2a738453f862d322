import { randomUUID } from "node:crypto";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import type { Logger } from "../logger.js";
import { protocolKey, requestIdKey, requestMetadataKey } from "./context.js";
import type { Metrics } from "./metrics.js";
import { errorInfoOf, isExpected, toConnectError } from "./status.js";

/**
 * The one interceptor every call goes through, whatever its protocol (REST included): it names the
 * request, maps whatever the service throws to google.rpc.Status, and logs and counts the outcome.
 */
export function observeCalls(options: { logger: Logger; metrics: Metrics; forwardedMetadata: string[] }): Interceptor {
  const { logger, metrics, forwardedMetadata } = options;
  return (next) => async (request) => {
    const started = performance.now();
    const values = request.contextValues;
    const metadata: Record<string, string> = {};
    for (const name of forwardedMetadata) {
      const value = request.header.get(name) ?? request.header.get(name.replaceAll("_", "-"));
      if (value) metadata[name] = value;
    }
    const requestId = metadata.request_id ?? request.header.get("x-request-id") ?? randomUUID();
    metadata.request_id = requestId;
    values.set(requestIdKey, requestId);
    values.set(requestMetadataKey, metadata);

    const route = `/${request.service.typeName}/${request.method.name}`;
    const labels = { route, protocol: values.get(protocolKey) };
    const log = logger.child({ request_id: requestId, route, protocol: labels.protocol });
    const finish = (error?: unknown): ConnectError | undefined => {
      const mapped = error === undefined ? undefined : toConnectError(error);
      const code = mapped ? Code[mapped.code] : "OK";
      metrics.requests.inc({ ...labels, code });
      metrics.latency.observe(labels, (performance.now() - started) / 1000);
      // Logs carry the error's category (Agent V1 §7), never its message or metadata.
      const fields = { code, ms: Math.round(performance.now() - started), category: mapped && errorInfoOf(mapped)?.metadata.category };
      if (mapped && !isExpected(error)) log.error({ ...fields, err: error }, "request failed");
      else log.info(fields, "request");
      return mapped;
    };

    let response;
    try {
      response = await next(request);
    } catch (error) {
      throw finish(error);
    }
    response.header.set("x-request-id", requestId);
    if (!response.stream) {
      finish();
      return response;
    }
    metrics.streamsInFlight.inc(labels);
    const messages = response.message;
    return {
      ...response,
      message: (async function* () {
        let failure: unknown;
        try {
          yield* messages;
        } catch (error) {
          failure = error;
          throw toConnectError(error);
        } finally {
          metrics.streamsInFlight.dec(labels);
          finish(failure ?? (request.signal.aborted ? new ConnectError("cancelled", Code.Canceled) : undefined));
        }
      })(),
    };
  };
}
