import type * as http from "node:http";
import http2 from "node:http2";
import { Code, ConnectError } from "@connectrpc/connect";
import { AxonError, invalidArgument } from "../errors.js";
import { inflateBounded } from "./compression.js";
import type { BodyTally } from "./intake-budget.js";

const { NGHTTP2_NO_ERROR } = http2.constants;

export type IncomingRequest = http.IncomingMessage | http2.Http2ServerRequest;

/** The ErrorInfo reason of an oversized body; REST answers it with HTTP 413 rather than 429. */
export const requestTooLargeReason = "REQUEST_TOO_LARGE";

/**
 * Reads the whole body, refusing more than `maxBytes`: at once from Content-Length, else as soon as the count passes
 * it. A gzip body (where the protocol allows one) is inflated within the same limit. An unauthenticated body counts
 * against the intake budget (`tally`) while it is read, and is given back however the read ends. It listens for events
 * rather than iterating, because leaving a for-await destroys the request and with it the socket the refusal must
 * still go out on.
 */
export function readRequestBody(req: IncomingRequest, maxBytes: number, options: { allowGzip?: boolean; tally?: BodyTally | undefined } = {}): Promise<Uint8Array> {
  const encoding = req.headers["content-encoding"]?.toLowerCase();
  const gzipped = encoding === "gzip" && options.allowGzip === true;
  if (encoding !== undefined && encoding !== "identity" && !gzipped) {
    const error = new AxonError(Code.InvalidArgument, "UNSUPPORTED_CONTENT_ENCODING", options.allowGzip ? "request bodies may only be gzipped" : "request bodies must not be compressed", {
      metadata: { content_encoding: encoding },
    });
    return Promise.reject(error);
  }
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > maxBytes) return Promise.reject(requestTooLarge(maxBytes));
  const body = req.readableEnded ? Promise.resolve(Buffer.alloc(0)) : readBounded(req, maxBytes, options.tally);
  // Zero bytes are the empty body whatever the encoding: there is nothing to inflate (Connect's own reading).
  return gzipped ? body.then((bytes) => (bytes.byteLength > 0 ? inflateBounded("gzip", bytes, maxBytes) : bytes)) : body;
}

function readBounded(req: IncomingRequest, maxBytes: number, tally: BodyTally | undefined): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    // Once the read is settled the listeners do nothing. A request read to its end goes with them, so they stay.
    let settled = false;
    const fail = (error: unknown): void => {
      settled = true;
      tally?.release();
      req.off("data", onData);
      reject(error);
    };
    const onData = (chunk: Buffer | string): void => {
      const bytes = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
      size += bytes.byteLength;
      try {
        if (size > maxBytes) throw requestTooLarge(maxBytes);
        tally?.add(bytes.byteLength);
      } catch (error) {
        req.pause();
        return fail(error);
      }
      chunks.push(bytes);
    };
    req.on("data", onData);
    req.on("end", () => {
      if (settled) return;
      settled = true;
      tally?.release();
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      if (!("stream" in req)) return resolve(body);
      // An HTTP/2 body ends the same way when its stream is reset before END_STREAM; a turn of the loop later the
      // reset is known, and a request the client cancelled is never processed.
      setImmediate(() => (req.stream.destroyed && req.stream.rstCode !== NGHTTP2_NO_ERROR ? reject(new ConnectError("client cancelled the request", Code.Canceled)) : resolve(body)));
    });
    // A request read to its end closes too, after its end.
    req.on("close", () => settled || fail(new ConnectError("client closed the request", Code.Canceled)));
    // An HTTP/1.1 request emits "error" only to a listener, and closes in any case.
    if ("stream" in req) req.on("error", (error: Error) => settled || fail(new ConnectError("request body could not be read", Code.Canceled, undefined, undefined, error)));
  });
}

export function requestTooLarge(maxBytes: number): AxonError {
  // The sender's mistake, not a quota: category rejected (ResourceExhausted alone would say rate_limited).
  return new AxonError(Code.ResourceExhausted, requestTooLargeReason, "request body too large", {
    metadata: { category: "rejected", max_bytes: String(maxBytes) },
  });
}

/** A body that does not decode as the method's request message: the caller's mistake, never INTERNAL. */
export function requestUndecodable(description?: string): AxonError {
  return invalidArgument(
    "REQUEST_UNDECODABLE",
    "the request body does not decode as the method's request message",
    description === undefined ? [] : [{ field: "", description }],
  );
}
