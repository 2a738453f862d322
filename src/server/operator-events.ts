import { toJson } from "@bufbuild/protobuf";
import type { PrincipalSet } from "../auth/principals.js";
import { EventSchema } from "../gen/axon/operator/v1/operator_pb.js";
import type { OperationsBroker } from "../operations/broker.js";
import { authenticated } from "./authenticate.js";
import { typeRegistry } from "./descriptors.js";
import { eventMessage } from "./operation-messages.js";
import type { HttpRequest, HttpResponse } from "./listener.js";
import { writeStatusError } from "./rest/http-response.js";
import { toConnectError } from "./status.js";

/**
 * GET /api/operator/v1/events: the operator feed as Server-Sent Events, each with its `seq` as the SSE id, so
 * a reconnecting browser resumes from `Last-Event-ID`. The same feed is OperatorService.WatchEvents on RPC.
 */
export async function serveOperatorEvents(req: HttpRequest, res: HttpResponse, broker: OperationsBroker, operators: PrincipalSet): Promise<void> {
  try {
    authenticated(operators, req.headers.authorization ?? null);
  } catch (error) {
    const status = toConnectError(error);
    return writeStatusError(res, status, { headers: status.metadata });
  }
  const header = req.headers["last-event-id"];
  const lastEventId = header === undefined ? undefined : Number(header);
  const abort = new AbortController();
  res.on("close", () => abort.abort());
  const write = (text: string): boolean => (res.write as (chunk: string) => boolean).call(res, text);
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  write(": connected\n\n");
  for await (const event of broker.events(lastEventId !== undefined && Number.isSafeInteger(lastEventId) ? lastEventId : undefined, abort.signal)) {
    const data = JSON.stringify(toJson(EventSchema, eventMessage(event), { registry: typeRegistry }));
    write(`id: ${event.seq}\nevent: ${event.kind}\ndata: ${data}\n\n`);
  }
}
