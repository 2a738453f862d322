import { AxonError } from "../errors.js";
import { isJsonObject } from "../json.js";
import { finishAnswer, send, type GitExchange } from "./git-exchange.js";
import { answerLfs, answerLfsUpstreamFailure, LFS_TYPE, LfsRequestError, readJsonBody } from "./lfs-answers.js";
import type { LfsCapability } from "./lfs-capabilities.js";
import { requestUpstream } from "./upstream.js";
import { extendBodyDeadline } from "../server/intake-timeouts.js";

/** The slowest an LFS upload may arrive, past the body timeout every request has. */
const UPLOAD_BYTES_PER_SECOND = 64 * 1024;

/**
 * An LFS transfer through a capability its batch issued: a download (`GET`), an upload (`PUT`) or its verify
 * (`POST`), sent to the host's own URL with the host's own headers, streamed both ways. The capability was the
 * decision; this only carries it out, for the object, method and size it names.
 */
export async function lfsTransfer(exchange: GitExchange, capability: LfsCapability): Promise<void> {
  const { req, record } = exchange;
  const method = req.method === "HEAD" ? "GET" : req.method;
  record.service = capability.method === "GET" ? "lfs download" : capability.method === "PUT" ? "lfs upload" : "lfs verify";
  record.operation = capability.method === "GET" ? "git.lfs.read" : "git.lfs.write";
  record.decision = "capability";
  if (method !== capability.method) {
    record.outcome = "failed";
    record.code = "method_not_allowed";
    return answerLfs(exchange, 405, `this transfer takes ${capability.method}`, { allow: capability.method });
  }
  try {
    if (capability.method === "GET") return await download(exchange, capability);
    if (capability.method === "PUT") return await upload(exchange, capability);
    return await verify(exchange, capability);
  } catch (error) {
    if (!(error instanceof AxonError || error instanceof LfsRequestError)) throw error;
    record.outcome = "failed";
    record.code = error instanceof AxonError ? error.reason.toLowerCase() : "lfs_request_invalid";
    answerLfs(exchange, error instanceof LfsRequestError ? error.status : 502, error.message);
  }
}

async function download(exchange: GitExchange, capability: LfsCapability): Promise<void> {
  const { record } = exchange;
  const { response } = await requestUpstream(capability.host, { method: "GET", url: new URL(capability.href), headers: capability.headers, signal: exchange.signal });
  record.upstreamStatus = response.statusCode;
  if (response.statusCode !== 200) {
    response.resume();
    return answerLfsUpstreamFailure(exchange, response.statusCode ?? 502);
  }
  const length = response.headers["content-length"];
  exchange.res.writeHead(200, { "content-type": "application/octet-stream", ...(typeof length === "string" ? { "content-length": length } : {}) });
  if (exchange.req.method === "HEAD") {
    response.resume();
  } else {
    for await (const piece of response as AsyncIterable<Buffer>) if (!(await send(exchange, piece))) return void (record.outcome = "failed");
  }
  await finishAnswer(exchange);
  record.outcome = "ok";
}

async function upload(exchange: GitExchange, capability: LfsCapability): Promise<void> {
  const { req, record } = exchange;
  const declared = req.headers["content-length"];
  if (declared !== undefined && declared !== String(capability.size)) throw new LfsRequestError(422, `this object is ${capability.size} bytes`);
  // A large object is given time in proportion to its size, as a stream upload is.
  extendBodyDeadline(req, (capability.size / UPLOAD_BYTES_PER_SECOND) * 1000);
  const body = {
    async *[Symbol.asyncIterator]() {
      for await (const piece of req as AsyncIterable<Buffer>) {
        record.bytesIn += piece.length;
        if (record.bytesIn > capability.size) throw new LfsRequestError(422, `this object is ${capability.size} bytes`);
        yield piece;
      }
    },
  };
  const { response, sent } = await requestUpstream(capability.host, {
    method: "PUT",
    url: new URL(capability.href),
    headers: { "content-type": "application/octet-stream", ...capability.headers, "content-length": String(capability.size) },
    body,
    signal: exchange.signal,
  });
  record.upstreamStatus = response.statusCode;
  response.resume();
  await sent.catch(() => undefined);
  const status = response.statusCode ?? 502;
  if (status < 200 || status > 299) return answerLfsUpstreamFailure(exchange, status);
  if (record.bytesIn !== capability.size) throw new LfsRequestError(422, `this object is ${capability.size} bytes`);
  exchange.res.writeHead(200, { "content-length": "0" });
  await finishAnswer(exchange);
  record.outcome = "ok";
}

async function verify(exchange: GitExchange, capability: LfsCapability): Promise<void> {
  const { record } = exchange;
  const body = await readJsonBody(exchange, 64 * 1024);
  if (!isJsonObject(body) || body.oid !== capability.oid || body.size !== capability.size) throw new LfsRequestError(422, "a verify names the object its upload was for");
  const { response } = await requestUpstream(capability.host, {
    method: "POST",
    url: new URL(capability.href),
    headers: { accept: LFS_TYPE, "content-type": LFS_TYPE, ...capability.headers },
    body: Buffer.from(JSON.stringify({ oid: capability.oid, size: capability.size })),
    signal: exchange.signal,
  });
  record.upstreamStatus = response.statusCode;
  response.resume();
  const status = response.statusCode ?? 502;
  if (status < 200 || status > 299) return answerLfsUpstreamFailure(exchange, status);
  exchange.res.writeHead(200, { "content-type": LFS_TYPE, "content-length": "0" });
  await finishAnswer(exchange);
  record.outcome = "ok";
}
