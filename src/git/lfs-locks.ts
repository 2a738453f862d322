import { AxonError } from "../errors.js";
import type { NativeOutcome } from "../operations/native-calls.js";
import { finishAnswer, forwardedHeaders, recordAllowed, recordRefused, send, type GitExchange, type GitServices } from "./git-exchange.js";
import { lfsCall } from "./git-operations.js";
import { answerLfs, answerLfsUpstreamFailure, LFS_TYPE, LfsRequestError } from "./lfs-answers.js";
import { refusalReason } from "./refusals.js";
import { upstreamUrl } from "./repository.js";
import { readLimited, requestUpstream } from "./upstream.js";

const MAX_LOCK_BODY = 64 * 1024;
const MAX_LOCK_ANSWER = 8 * 1024 * 1024;
const LOCK_PATH = /^info\/lfs\/locks(?:\/verify|\/[A-Za-z0-9_.-]{1,200}\/unlock)?$/;

/**
 * The LFS locking API (`info/lfs/locks`, `.../verify`, `.../<id>/unlock`), relayed with Axon's credential: listing
 * and verifying locks are reads, taking and releasing one are writes. Bodies are small JSON documents, passed as they
 * are in both directions (a 409 carries the lock that is in the way).
 */
export async function lfsLocks(exchange: GitExchange, services: GitServices, service: string, query: string): Promise<void> {
  const { req, record, repository } = exchange;
  record.service = "lfs locks";
  if (!LOCK_PATH.test(service)) {
    record.outcome = "failed";
    return answerLfs(exchange, 404, "no such LFS route");
  }
  const method = req.method ?? "GET";
  const reads = method === "GET" || service.endsWith("/verify");
  if (method !== "GET" && method !== "POST") return answerLfs(exchange, 405, "LFS lock routes take GET or POST", { allow: "GET, POST" });
  const operation = reads ? "git.lfs.read" : "git.lfs.write";
  record.operation = operation;
  const action = service.endsWith("/unlock") ? "unlock" : service.endsWith("/verify") ? "verify locks" : method === "GET" ? "list locks" : "lock";
  const decision = await services.native().hold(lfsCall(exchange.clientId, repository, operation, { action }, `Git LFS ${action}`), { signal: exchange.signal });
  if (decision.effect === "refused") {
    recordRefused(record, decision);
    return answerLfs(exchange, 403, refusalReason(decision, operation));
  }
  recordAllowed(record, decision);
  let outcome: NativeOutcome;
  try {
    const body = method === "POST" ? await readBody(exchange) : undefined;
    const authorization = await services.credentials.authorization(repository.host, repository.owner, repository.name, reads ? "read" : "write");
    const { response } = await requestUpstream(repository.host.name, {
      method,
      url: upstreamUrl(repository, service, method === "GET" ? query : ""),
      headers: { ...forwardedHeaders(req, [], authorization), accept: LFS_TYPE, ...(body ? { "content-type": LFS_TYPE } : {}) },
      ...(body ? { body } : {}),
      signal: exchange.signal,
    });
    const status = response.statusCode ?? 502;
    record.upstreamStatus = status;
    if ((status < 200 || status > 299) && status !== 409) {
      response.resume();
      answerLfsUpstreamFailure(exchange, status);
      outcome = { ok: false, code: "git_upstream_refused", message: `the host answered HTTP ${status}` };
    } else {
      const answer = await readLimited(response, MAX_LOCK_ANSWER);
      exchange.res.writeHead(status, { "content-type": LFS_TYPE });
      await send(exchange, answer);
      await finishAnswer(exchange);
      record.outcome = status === 409 ? "refused" : "ok";
      outcome = status === 409 ? { ok: false, code: "lfs_lock_conflict", message: "the file is locked" } : { ok: true, detail: { upstream_status: status } };
    }
  } catch (error) {
    if (!(error instanceof AxonError || error instanceof LfsRequestError)) throw error;
    record.outcome = "failed";
    record.code = error instanceof AxonError ? error.reason.toLowerCase() : "lfs_request_invalid";
    answerLfs(exchange, error instanceof LfsRequestError ? error.status : 502, error.message);
    outcome = { ok: false, code: record.code, message: error.message };
  }
  await decision.finish(outcome);
}

async function readBody(exchange: GitExchange): Promise<Buffer> {
  const pieces: Buffer[] = [];
  for await (const piece of exchange.req as AsyncIterable<Buffer>) {
    exchange.record.bytesIn += piece.length;
    if (exchange.record.bytesIn > MAX_LOCK_BODY) throw new LfsRequestError(413, `an LFS lock request is at most ${MAX_LOCK_BODY} bytes`);
    pieces.push(piece);
  }
  return Buffer.concat(pieces);
}
