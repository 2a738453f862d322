import { promisify } from "node:util";
import zlib from "node:zlib";
import { requestTooLarge, requestUndecodable } from "./request-body.js";

/** Messages at least this large are gzipped for a client that accepts it (connect-es's threshold too). */
export const compressMinBytes = 1024;

export const gzip: (bytes: Uint8Array) => Promise<Buffer> = promisify(zlib.gzip);
const inflaters = {
  gzip: promisify(zlib.gunzip) as (bytes: Uint8Array, options: zlib.ZlibOptions) => Promise<Buffer>,
  br: promisify(zlib.brotliDecompress) as (bytes: Uint8Array, options: zlib.BrotliOptions) => Promise<Buffer>,
};

/**
 * Decompresses a request body or message, refusing one that inflates past the limit (a gzip bomb stops there). REST
 * and gRPC bodies come gzipped; Connect and gRPC streams may use brotli too.
 */
export async function inflateBounded(encoding: keyof typeof inflaters, bytes: Uint8Array, maxBytes: number): Promise<Buffer> {
  try {
    return await inflaters[encoding](bytes, { maxOutputLength: maxBytes });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE") throw requestTooLarge(maxBytes);
    throw requestUndecodable(`the body is not valid ${encoding}`);
  }
}

/** The request encodings `inflateBounded` reads. */
export function isInflatable(encoding: string | undefined): encoding is keyof typeof inflaters {
  return encoding === "gzip" || encoding === "br";
}

/** Whether an accept-encoding list (`gzip, br;q=0.5`) names gzip. */
export function acceptsGzip(accepted: string | undefined): boolean {
  return accepted !== undefined && /(?:^|,)\s*gzip\s*(?:;|,|$)/i.test(accepted) && !/(?:^|,)\s*gzip\s*;\s*q=0(?:\.0*)?\s*(?:,|$)/i.test(accepted);
}
