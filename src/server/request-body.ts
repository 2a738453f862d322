import type * as http from "node:http";
import type * as http2 from "node:http2";
import { Code, ConnectError } from "@connectrpc/connect";
import { AxonError } from "../../errors.js";

export type RestIncomingRequest = http.IncomingMessage | http2.Http2ServerRequest;

/** The ErrorInfo reason of an oversized body; REST answers it with HTTP 413 rather than 429. */
export const requestTooLargeReason = "REQUEST_TOO_LARGE";

/**
 * Reads the whole body, refusing more than `maxBytes`: at once from Content-Length, else as soon as
 * the count passes it. It listens for events rather than iterating, because leaving a for-await
 * destroys the request and with it the socket the 413 must still go out on.
 */
export function readRequestBody(req: RestIncomingRequest, maxBytes: number): Promise<Uint8Array> {
  const encoding = req.headers["content-encoding"];
  if (encoding !== undefined && encoding.toLowerCase() !== "identity") {
    return Promise.reject(
      new AxonError(Code.InvalidArgument, "UNSUPPORTED_CONTENT_ENCODING", "request bodies must not be compressed", {
        metadata: { content_encoding: encoding },
      }),
    );
  }
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > maxBytes) return Promise.reject(requestTooLarge(maxBytes));

  if (req.readableEnded) return Promise.resolve(new Uint8Array(0));

  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer | string): void => {
      const bytes = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
      size += bytes.byteLength;
      if (size > maxBytes) {
        stop();
        req.pause();
        reject(requestTooLarge(maxBytes));
        return;
      }
      chunks.push(bytes);
    };
    const onEnd = (): void => {
      stop();
      resolve(Buffer.concat(chunks));
    };
    const onClose = (): void => {
      stop();
      reject(new ConnectError("client closed the request", Code.Canceled));
    };
    const onError = (error: Error): void => {
      stop();
      reject(new ConnectError("request body could not be read", Code.Canceled, undefined, undefined, error));
    };
    const stop = (): void => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("close", onClose);
      req.off("error", onError);
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("close", onClose);
    req.on("error", onError);
  });
}

function requestTooLarge(maxBytes: number): AxonError {
  return new AxonError(Code.ResourceExhausted, requestTooLargeReason, "request body too large", {
    metadata: { max_bytes: String(maxBytes) },
  });
}
