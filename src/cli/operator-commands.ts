import { requireToken, type CliContext, type Json } from "./context.js";
import { printFields } from "./operation-commands.js";
import { printJson, printLine, printTable, text } from "./output.js";
import { linesOf, RestClient } from "./rest-client.js";

const REQUESTS = "/api/operator/v1/requests";

const operatorApi = (context: CliContext) => new RestClient(context.url, requireToken(context.operatorToken, "operator"));
const requestRoute = (id: string) => `${REQUESTS}/${encodeURIComponent(id)}`;

export async function listRequests(context: CliContext, status: string): Promise<void> {
  const page = await operatorApi(context).get(REQUESTS, { status });
  if (context.json) return printJson(page);
  const requests = (page.requests as Json[] | undefined) ?? [];
  printTable(
    ["ID", "STATUS", "CLIENT", "OPERATION", "MODE", "TARGET", "REASON"],
    requests.map((request) => [text(request.id), text(request.status), text(request.client_id), text(request.operation), text(request.mode), text(request.target), text(request.reason)]),
  );
}

export interface DecisionOptions {
  reason?: string;
  minutes?: number;
  maxUses?: number;
  arguments?: Record<string, unknown>;
}

/** One request, and what its linked operation (a held push's ref updates, a tool call's arguments) asks for. */
export async function getRequest(context: CliContext, id: string): Promise<void> {
  const request = await operatorApi(context).get(requestRoute(id));
  if (context.json) return printJson(request);
  printFields(request, ["id", "status", "client_id", "operation", "target", "reason", "mode", "minutes", "max_uses", "uses_remaining", "expires_at", "revision"]);
  const linked = request.linked_operation as Json | undefined;
  if (linked) printFields(linked, ["id", "state", "arguments"]);
}

/**
 * approve / deny / revoke: decisions are compare-and-swaps on the request's revision, so the request is read first and
 * its current revision sent as expected_revision (a decision racing another one is a conflict, exit status 5).
 */
export async function decide(context: CliContext, decision: "approve" | "deny" | "revoke", id: string, options: DecisionOptions = {}): Promise<void> {
  const api = operatorApi(context);
  const current = await api.get(requestRoute(id));
  const decided = await api.post(`${requestRoute(id)}/${decision}`, {
    expected_revision: current.revision,
    ...(options.reason === undefined ? {} : { reason: options.reason }),
    ...(options.minutes === undefined ? {} : { minutes: options.minutes }),
    ...(options.maxUses === undefined ? {} : { max_uses: options.maxUses }),
    ...(options.arguments === undefined ? {} : { arguments: options.arguments }),
  });
  if (context.json) return printJson(decided);
  printFields(decided, ["id", "status", "client_id", "operation", "target", "mode", "minutes", "max_uses", "uses_remaining", "expires_at", "revision"]);
}

/**
 * `axon operator watch`: the operator feed (Server-Sent Events), one line per event until Ctrl-C. The feed starts
 * with the next event, or after event `afterSeq` (sent as Last-Event-ID, as a reconnecting browser does).
 */
export async function watchEvents(context: CliContext, afterSeq?: number): Promise<void> {
  const abort = new AbortController();
  const stop = () => abort.abort();
  process.once("SIGINT", stop);
  try {
    const response = await operatorApi(context).open("GET", "/api/operator/v1/events", {
      headers: { accept: "text/event-stream", ...(afterSeq === undefined ? {} : { "last-event-id": String(afterSeq) }) },
      signal: abort.signal,
    });
    let event: { kind?: string; data: string[] } = { data: [] };
    for await (const line of linesOf(response)) {
      if (line === "") {
        if (event.data.length > 0) printEvent(context, event.kind, event.data.join("\n"));
        event = { data: [] };
      } else if (line.startsWith("event:")) event.kind = line.slice(6).trim();
      else if (line.startsWith("data:")) event.data.push(line.slice(5).trimStart());
    }
  } catch (error) {
    if (!abort.signal.aborted) throw error;
  } finally {
    process.off("SIGINT", stop);
  }
}

function printEvent(context: CliContext, kind: string | undefined, data: string): void {
  const event = JSON.parse(data) as Json;
  // One JSON document per line with --json: a stream has no single document to end with.
  if (context.json) return printLine(JSON.stringify(event));
  const parts = [text(event.created_at), text(event.kind ?? kind), text(event.request_id), text(event.operation_id), event.revision === undefined ? "" : `rev ${text(event.revision)}`];
  printLine(parts.filter((part) => part !== "").join("  "));
}
