import { toJson } from "@bufbuild/protobuf";
import { EventSchema } from "../gen/axon/operator/v1/operator_pb.js";
import type { OperationsBroker } from "../operations/broker.js";
import { credentialsOf, type Authenticator } from "./authenticate.js";
import { typeRegistry } from "./descriptors.js";
import { eventMessage } from "./operation-messages.js";
import type { HttpRequest, HttpResponse } from "./listener.js";
import { writeStatusError } from "./rest/http-response.js";
import { toConnectError } from "./status.js";
import { strictResponseHeaders } from "./strict/contract.js";
import { invalidArgument } from "../errors.js";

/**
 * GET /api/operator/v1/events: the operator feed as Server-Sent Events, each with its `seq` as the SSE id, so
 * a reconnecting browser resumes from `Last-Event-ID`. The same feed is OperatorService.WatchEvents on RPC.
 */
export async function serveOperatorEvents(req: HttpRequest, res: HttpResponse, broker: OperationsBroker, authenticator: Pick<Authenticator, "operator">): Promise<void> {
  for (const [name, value] of Object.entries(strictResponseHeaders)) res.setHeader(name, value);
  const abort = new AbortController();
  let feed: ReturnType<OperationsBroker["operatorFeed"]>;
  try {
    await authenticator.operator(credentialsOf(req));
    // Taken before the 200: a replica still waiting for its database answers 503 here, with Retry-After.
    feed = broker.operatorFeed(lastEventIdOf(req.headers["last-event-id"]), abort.signal);
  } catch (error) {
    const status = toConnectError(error, { contractCodes: true });
    return writeStatusError(res, status, { headers: status.metadata });
  }
  res.on("close", () => abort.abort());
  const write = (text: string): boolean => (res.write as (chunk: string) => boolean).call(res, text);
  res.writeHead(200, { "content-type": "text/event-stream" });
  write(": connected\n\n");
  for await (const event of feed) {
    const data = JSON.stringify(toJson(EventSchema, eventMessage(event), { registry: typeRegistry }));
    write(`id: ${event.seq}\nevent: ${event.kind}\ndata: ${data}\n\n`);
  }
}

/** The seq to resume after: absent means a fresh watch; anything but a non-negative integer is the client's mistake. */
function lastEventIdOf(value: string | string[] | undefined): number | undefined {
  if (value === undefined) return undefined;
  const header = Array.isArray(value) ? value.join(",") : value;
  const seq = /^\d{1,15}$/.test(header.trim()) ? Number(header.trim()) : Number.NaN;
  if (!Number.isSafeInteger(seq)) throw invalidArgument("INVALID_LAST_EVENT_ID", "Last-Event-ID must be an event id", [{ field: "Last-Event-ID", description: "a non-negative integer" }]);
  return seq;
}
