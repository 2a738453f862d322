import type http from "node:http";
import type { Writable } from "node:stream";
import type { JsonObject } from "@bufbuild/protobuf";
import type { HttpRequest, HttpResponse } from "../server/listener.js";
import type { Allowed, NativeCalls, Refused } from "../operations/native-calls.js";
import type { UpstreamCredentials } from "./upstream-credentials.js";
import type { GitRepository } from "./repository.js";

/** What the Git routes share: the decider, the upstream credentials, and the limits. */
export interface GitServices {
  /** `broker.native`, looked up per request: the broker exists once the database has opened. */
  native(): Pick<NativeCalls, "hold" | "audit">;
  credentials: UpstreamCredentials;
  /** Where pushes are spooled while they are decided. */
  spoolDirectory: string;
  maxPushBytes: number;
  /** Aborted once the server's grace period is over: what still waits (a held push) is told the server is stopping. */
  shutdownSignal: AbortSignal;
}

/** What one Git request did, for its log line, metrics and span. Never a secret: no header, no URL query, no token. */
export interface GitRecord {
  service: string;
  operation?: string;
  /** The ref updates of a push, each with its class. */
  updates?: JsonObject[];
  /** How it was allowed (`rule:<id>`, `grant:<id>`, `approval:<id>`), or why it was refused. */
  decision?: string;
  upstreamStatus?: number;
  bytesIn: number;
  bytesOut: number;
  /** `ok`, `refused` (policy, an operator, a moved ref), or `failed` (the upstream, or the client left). */
  outcome: "ok" | "refused" | "failed";
  code?: string;
}

/** Notes how the call was allowed: `rule:<id>`, `grant:<id>` or `approval:<id>`. */
export function recordAllowed(record: GitRecord, allowed: Allowed): void {
  const via = allowed.via;
  record.decision = "rule" in via ? `rule:${via.rule}` : "grant" in via ? `grant:${via.grant}` : `approval:${via.approval}`;
}

/** Notes why the call was refused: the rule, or the decider's code word. */
export function recordRefused(record: GitRecord, refused: Refused): void {
  record.outcome = "refused";
  record.code = refused.code;
  record.decision = refused.rule === undefined ? refused.code : `rule:${refused.rule}`;
}

/** One Git request in flight: who asks, for which repository, and whether it is still wanted. */
export interface GitExchange {
  req: HttpRequest;
  res: HttpResponse;
  clientId: string;
  repository: GitRepository;
  /** Aborted when the client goes away or the server shuts down. */
  signal: AbortSignal;
  record: GitRecord;
}

/** What an answer of Axon's own needs of an exchange: also one not yet authenticated. */
export type Answerable = Pick<GitExchange, "req" | "res" | "record">;

/** Writes `bytes` and waits while the client's socket is full; resolves false once the client has gone. */
export async function send(exchange: GitExchange, bytes: Uint8Array): Promise<boolean> {
  const { res } = exchange;
  if (res.destroyed || res.writableEnded) return false;
  if (bytes.byteLength === 0) return true;
  exchange.record.bytesOut += bytes.byteLength;
  if ((res.write as (chunk: Uint8Array) => boolean).call(res, bytes)) return true;
  await new Promise<void>((resolve) => {
    const done = () => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.on("drain", done);
    res.on("close", done);
  });
  return !res.destroyed;
}

/**
 * Pipes the host's answer to the client (backpressure by the pipe, no copy of ours), `onPiece` seeing each piece;
 * resolves once the host's answer has ended, true when it all went out. A client that leaves stops the piping, not
 * the reading: the rest of the answer still passes `onPiece` (a push's report says how it ended).
 */
export function relayAnswer(exchange: GitExchange, response: http.IncomingMessage, onPiece?: (piece: Buffer) => void): Promise<boolean> {
  const { res, record } = exchange;
  return new Promise((resolve) => {
    let clientLeft = false;
    const left = () => {
      clientLeft = true;
      response.unpipe(res as Writable);
      response.resume();
    };
    res.once("close", left);
    response.on("data", (piece: Buffer) => {
      record.bytesOut += piece.length;
      onPiece?.(piece);
    });
    const done = () => {
      res.off("close", left);
      resolve(!clientLeft && !res.destroyed);
    };
    response.once("end", done);
    response.once("error", done);
    response.pipe(res as Writable, { end: false });
  });
}

/** Ends the answer; resolves once it has gone out (or the client left). */
export function finishAnswer(exchange: GitExchange): Promise<void> {
  const { res } = exchange;
  return new Promise((resolve) => {
    if (res.destroyed || res.writableFinished) return resolve();
    res.once("close", () => resolve());
    res.end(() => resolve());
  });
}

/**
 * A plain-text failure as Git's smart-HTTP client expects one: for a ref advertisement Git shows the body's lines as
 * `remote: ...`; elsewhere it shows the status.
 */
export function answerText(exchange: Answerable, status: number, message: string, headers: Record<string, string> = {}): void {
  answerWith(exchange, status, "text/plain; charset=utf-8", `axon: ${message}\n`, { "cache-control": "no-cache", ...headers });
}

/** An answer of Axon's own, complete in one write; a request body still arriving is not read to be dropped. */
export function answerWith(exchange: Answerable, status: number, contentType: string, body: string, headers: Record<string, string> = {}): void {
  const { res, req } = exchange;
  if (res.headersSent) return void res.destroy();
  exchange.record.bytesOut += Buffer.byteLength(body);
  const unread = !req.complete && ((req.headers["content-length"] ?? "0") !== "0" || req.headers["transfer-encoding"] !== undefined);
  res.writeHead(status, { "content-type": contentType, ...(unread && "httpVersionMajor" in req && req.httpVersionMajor === 1 ? { connection: "close" } : {}), ...headers });
  res.end(body);
}

/** The client's request headers a host needs to answer as it would answer the client (never its Authorization). */
export function forwardedHeaders(req: HttpRequest, names: readonly string[], authorization: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of names) {
    const value = req.headers[name];
    if (typeof value === "string") headers[name] = value;
  }
  headers["user-agent"] = typeof req.headers["user-agent"] === "string" ? req.headers["user-agent"] : "git/axon";
  if (authorization !== undefined) headers.authorization = authorization;
  return headers;
}
