import type http from "node:http";
import { AxonError } from "../errors.js";
import type { NativeOutcome } from "../operations/native-calls.js";
import { answerText, finishAnswer, forwardedHeaders, recordAllowed, recordRefused, relayAnswer, type GitExchange, type GitServices } from "./git-exchange.js";
import { fetchCall } from "./git-operations.js";
import { refusalReason } from "./refusals.js";
import { upstreamUrl } from "./repository.js";
import { requestUpstream, type UpstreamRequest } from "./upstream.js";

/** Response headers of the host's that the client gets; nothing else of the host's answer (no cookie, no auth challenge). */
const RELAYED_HEADERS = ["content-type", "content-encoding", "cache-control", "expires", "pragma"];

/**
 * `GET .../info/refs?service=...`: the ref advertisement a fetch (or a push) starts with, decided as a fetch. Only the
 * smart protocol is served; protocol v2's `Git-Protocol` header goes through, so a v2 client talks v2 to the host.
 */
export async function advertiseRefs(exchange: GitExchange, services: GitServices, query: URLSearchParams): Promise<void> {
  const service = query.get("service");
  exchange.record.service = `info/refs ${service ?? ""}`.trim();
  if (service !== "git-upload-pack" && service !== "git-receive-pack") {
    exchange.record.outcome = "failed";
    return answerText(exchange, 403, "only Git's smart HTTP protocol is served (info/refs?service=git-upload-pack or git-receive-pack)");
  }
  await relayFetch(exchange, services, service === "git-receive-pack" ? "write" : "read", {
    method: "GET",
    service: "info/refs",
    query: `?service=${service}`,
    headers: ["accept", "git-protocol"],
  });
}

/** `POST .../git-upload-pack`: a fetch's negotiation and pack, both ways streamed untouched (v0, v1 and v2 alike). */
export async function uploadPack(exchange: GitExchange, services: GitServices): Promise<void> {
  exchange.record.service = "git-upload-pack";
  await relayFetch(exchange, services, "read", {
    method: "POST",
    service: "git-upload-pack",
    query: "",
    headers: ["content-type", "content-encoding", "content-length", "accept", "accept-encoding", "git-protocol"],
    body: counted(exchange),
  });
}

interface FetchRequest {
  method: string;
  service: string;
  query: string;
  headers: string[];
  body?: AsyncIterable<Uint8Array>;
}

async function relayFetch(exchange: GitExchange, services: GitServices, access: "read" | "write", request: FetchRequest): Promise<void> {
  const { record, repository } = exchange;
  record.operation = "git.fetch";
  const decision = await services.native().hold(fetchCall(exchange.clientId, repository, record.service), { signal: exchange.signal });
  if (decision.effect === "refused") {
    recordRefused(record, decision);
    return answerText(exchange, 403, refusalReason(decision, "git.fetch"));
  }
  recordAllowed(record, decision);
  const outcome = await relay(exchange, services, access, request).catch((error: unknown): NativeOutcome => {
    if (!(error instanceof AxonError)) throw error;
    record.outcome = "failed";
    record.code = error.reason.toLowerCase();
    answerText(exchange, error.reason === "GIT_CREDENTIAL_MISSING" || error.reason === "GIT_HOST_READ_ONLY" ? 503 : 502, error.message);
    return { ok: false, code: record.code, message: error.message };
  });
  await decision.finish(outcome);
  await finishAnswer(exchange);
}

async function relay(exchange: GitExchange, services: GitServices, access: "read" | "write", request: FetchRequest): Promise<NativeOutcome> {
  const { record, repository, req } = exchange;
  const authorization = await services.credentials.authorization(repository.host, repository.owner, repository.name, access);
  const forwarding = new AbortController();
  const upstream: UpstreamRequest = {
    method: request.method,
    url: upstreamUrl(repository, request.service, request.query),
    headers: forwardedHeaders(req, request.headers, authorization),
    signal: AbortSignal.any([exchange.signal, forwarding.signal]),
    ...(request.body ? { body: request.body } : {}),
  };
  const { response, sent } = await requestUpstream(repository.host.name, upstream);
  record.upstreamStatus = response.statusCode;
  if (response.statusCode !== 200) {
    // A host that refused the request need not read the rest of its body.
    response.resume();
    forwarding.abort();
    await sent.catch(() => undefined);
    answerUpstreamFailure(exchange, response.statusCode ?? 502);
    return { ok: false, code: "git_upstream_refused", message: `the host answered HTTP ${response.statusCode}`, detail: { upstream_status: response.statusCode ?? 0 } };
  }
  exchange.res.writeHead(200, relayedHeaders(response));
  const whole = await relayAnswer(exchange, response);
  await sent.catch(() => undefined);
  const detail = { upstream_status: 200, bytes_in: record.bytesIn, bytes_out: record.bytesOut };
  record.outcome = whole ? "ok" : "failed";
  if (!whole) record.code = "client_left";
  return whole ? { ok: true, detail } : { ok: false, code: "client_left", message: "the client went away", detail };
}

/** What the client hears of a host that would not serve the request: never a 401 (Git would ask its helper again). */
export function answerUpstreamFailure(exchange: GitExchange, status: number): void {
  const { record, repository } = exchange;
  record.outcome = "failed";
  record.code = "git_upstream_refused";
  const where = `${repository.owner}/${repository.name} on host ${repository.host.name}`;
  if (status === 404) return answerText(exchange, 404, `repository ${where} not found`);
  if (status === 401) return answerText(exchange, 502, `host ${repository.host.name} refused Axon's credential for ${where}`);
  if (status === 403) return answerText(exchange, 403, `host ${repository.host.name} refused access to ${where}`);
  answerText(exchange, 502, `host ${repository.host.name} failed (HTTP ${status})`);
}

export function relayedHeaders(response: http.IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of RELAYED_HEADERS) {
    const value = response.headers[name];
    if (typeof value === "string") headers[name] = value;
  }
  return headers;
}

/** The request body, its bytes counted as they pass. */
function counted(exchange: GitExchange): AsyncIterable<Uint8Array> {
  return {
    async *[Symbol.asyncIterator]() {
      for await (const piece of exchange.req as AsyncIterable<Buffer>) {
        exchange.record.bytesIn += piece.length;
        yield piece;
      }
    },
  };
}
