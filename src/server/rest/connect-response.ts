import { Code, ConnectError } from "@connectrpc/connect";
import { codeFromHttpStatus, errorFromJsonBytes } from "@connectrpc/connect/protocol-connect";

/** Every byte of a Connect response body. */
export async function readAllBytes(body: AsyncIterable<Uint8Array> | undefined): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  if (body !== undefined) for await (const chunk of body) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/**
 * The error a non-200 Connect response stands for: its error JSON when it has one, else what its HTTP
 * status means (the router answers a few protocol failures with a bare status).
 */
export function errorOfConnectResponse(status: number, body: Uint8Array, header: Headers | undefined): ConnectError {
  const fallback = new ConnectError(`upstream answered HTTP ${status}`, status === 200 ? Code.Internal : codeFromHttpStatus(status));
  if (body.byteLength === 0) return fallback;
  try {
    return errorFromJsonBytes(body, header, fallback);
  } catch {
    return fallback;
  }
}
