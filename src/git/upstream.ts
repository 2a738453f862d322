import http from "node:http";
import https from "node:https";
import { AxonError, Code } from "../errors.js";

/** A connection to a host that sends nothing either way for this long is given up. */
const IDLE_TIMEOUT_MS = 10 * 60_000;

const agents = {
  "http:": new http.Agent({ keepAlive: true, maxSockets: 256 }),
  "https:": new https.Agent({ keepAlive: true, maxSockets: 256 }),
};

export interface UpstreamRequest {
  method: string;
  url: URL;
  headers: Record<string, string>;
  /** Sent as it is produced, at the pace the host takes it. */
  body?: AsyncIterable<Uint8Array> | Buffer;
  signal: AbortSignal;
  /** Counts the body's bytes as they go out. */
  onSent?: (bytes: number) => void;
}

export interface UpstreamResponse {
  response: http.IncomingMessage;
  /** Settles once the body has gone out whole (or rejects when it could not be sent). */
  sent: Promise<void>;
}

/** The host could not be reached or broke off: what the client is told names the host, never the URL or a header. */
export function upstreamUnreachable(hostName: string, cause?: unknown): AxonError {
  return new AxonError(Code.Unavailable, "GIT_UPSTREAM_UNREACHABLE", `host ${hostName} could not be reached`, { cause });
}

/**
 * One request to a Git host, streamed: the body is written with backpressure, and the response resolves as soon as
 * its headers are in (a host may answer before it has read the whole body). Aborting `signal` tears both down.
 */
export function requestUpstream(hostName: string, request: UpstreamRequest): Promise<UpstreamResponse> {
  const { url, signal } = request;
  const transport = url.protocol === "https:" ? https : http;
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(upstreamUnreachable(hostName, signal.reason));
    const outgoing = transport.request(url, {
      method: request.method,
      headers: request.headers,
      agent: agents[url.protocol as "http:" | "https:"],
      signal,
    });
    outgoing.setTimeout(IDLE_TIMEOUT_MS, () => outgoing.destroy(new Error("the host went silent")));
    // A request's last small write (a chunked body's end) must not wait for the host's delayed ACK (Nagle).
    outgoing.once("socket", (socket) => socket.setNoDelay(true));
    let settled = false;
    let sendFailed: ((error: unknown) => void) | undefined;
    const sent = new Promise<void>((resolveSent, rejectSent) => {
      sendFailed = rejectSent;
      void sendBody(outgoing, request).then(resolveSent, (error: unknown) => {
        // A body that cannot be sent whole must not look whole to the host: the request is torn down mid-body.
        outgoing.destroy(error instanceof Error ? error : new Error(String(error)));
        rejectSent(error);
      });
    });
    sent.catch(() => undefined);
    outgoing.once("response", (response) => {
      settled = true;
      resolve({ response, sent });
    });
    outgoing.once("error", (error) => {
      sendFailed?.(error);
      if (!settled) reject(upstreamUnreachable(hostName, error));
    });
  });
}

async function sendBody(outgoing: http.ClientRequest, request: UpstreamRequest): Promise<void> {
  const { body } = request;
  if (body === undefined) return void outgoing.end();
  if (Buffer.isBuffer(body)) {
    request.onSent?.(body.length);
    return void outgoing.end(body);
  }
  for await (const piece of body) {
    if (outgoing.destroyed) throw new Error("the upstream request ended before its body was sent");
    request.onSent?.(piece.byteLength);
    if (!outgoing.write(piece)) await drained(outgoing);
  }
  await new Promise<void>((resolve) => outgoing.end(resolve));
}

function drained(outgoing: http.ClientRequest): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      outgoing.off("drain", done);
      outgoing.off("close", done);
      resolve();
    };
    outgoing.on("drain", done);
    outgoing.on("close", done);
  });
}

/** A response body read whole, refused past `limit` bytes (ref advertisements, LFS batch answers). */
export async function readLimited(response: AsyncIterable<Uint8Array>, limit: number): Promise<Buffer> {
  const pieces: Buffer[] = [];
  let size = 0;
  for await (const piece of response) {
    size += piece.byteLength;
    if (size > limit) throw new AxonError(Code.Unavailable, "GIT_UPSTREAM_ANSWER_TOO_LARGE", `the host's answer is larger than ${limit} bytes`);
    pieces.push(Buffer.from(piece));
  }
  return Buffer.concat(pieces, size);
}
