import { Code } from "@connectrpc/connect";
import { AxonError, invalidArgument } from "../errors.js";
import type { Logger } from "../logger.js";
import { MAX_SEALED_BYTES, payloadTooLarge } from "../operations/transfers/sealed-payloads.js";
import type { Transfers } from "../operations/transfers/transfers.js";
import { credentialsOf, type Authenticator } from "./authenticate.js";
import { extendBodyDeadline } from "./intake-timeouts.js";
import type { HttpRequest, HttpResponse } from "./listener.js";
import { writeJson } from "./rest/http-response.js";
import { httpStatusOf, isExpected, statusJson, toConnectError } from "./status.js";

const sealedPayloadsPath = "/api/agent/v1/sealed-payloads";
/** The slowest a client's stream upload may arrive, past the body timeout every request has. */
const uploadBytesPerSecond = 64 * 1024;
const streamsPath = "/api/agent/v1/streams";
const streamPath = /^\/api\/agent\/v1\/streams\/([^/]+)$/;

/** Refusals whose HTTP status says more than the google.rpc code's standard mapping does. */
const httpStatusOfReason: Record<string, number> = {
  METHOD_NOT_ALLOWED: 405,
  LENGTH_REQUIRED: 411,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_CONTENT_TYPE: 415,
};

export interface TransferRoutes {
  /** Answers a transfer route and resolves true; resolves false for any other path. */
  handle(req: HttpRequest, res: HttpResponse): Promise<boolean>;
}

/**
 * The transfer routes of Agent V1 §6: plain HTTP carrying raw bytes, not transcoded RPCs. Errors are google.rpc.Status
 * JSON as on every other route; the bytes never reach a log line or an error.
 */
export function createTransferRoutes(options: { transfers: Transfers; authenticator: Pick<Authenticator, "client">; logger: Logger }): TransferRoutes {
  const { transfers, authenticator, logger } = options;

  async function sealPayload(req: HttpRequest, res: HttpResponse, clientId: string): Promise<void> {
    const mediaType = (req.headers["content-type"] ?? "").split(";", 1)[0]?.trim().toLowerCase();
    if (mediaType !== "application/octet-stream") {
      throw invalidArgument("UNSUPPORTED_CONTENT_TYPE", "a sealed payload is sent as application/octet-stream", [
        { field: "Content-Type", description: "application/octet-stream" },
      ]);
    }
    const idempotencyKey = header(req, "idempotency-key");
    if (idempotencyKey === undefined) {
      throw invalidArgument("IDEMPOTENCY_KEY_REQUIRED", "an Idempotency-Key header is required", [
        { field: "Idempotency-Key", description: "1-128 characters of A-Z a-z 0-9 . _ : -" },
      ]);
    }
    const declared = contentLength(req);
    if (declared !== undefined && declared > MAX_SEALED_BYTES) throw payloadTooLarge();
    const body = await readBounded(req, MAX_SEALED_BYTES);
    const { receipt, created } = await transfers.sealedPayloads.create(clientId, idempotencyKey, body);
    body.fill(0);
    writeJson(res, created ? 201 : 200, { id: receipt.id, size: receipt.size, digest: receipt.digest, expires_at: receipt.expiresAt.toISOString() });
  }

  async function uploadStream(req: HttpRequest, res: HttpResponse, clientId: string): Promise<void> {
    const declared = contentLength(req);
    if (declared === undefined) {
      throw invalidArgument("LENGTH_REQUIRED", "a stream upload needs a Content-Length", [{ field: "Content-Length", description: "the size of the body in bytes" }]);
    }
    // A stream may be far larger than an RPC body: its known sender gets time in proportion to what it declares.
    extendBodyDeadline(req, (declared / uploadBytesPerSecond) * 1000);
    const receipt = await transfers.streams.upload(clientId, declared, bodyOf(req));
    writeJson(res, 201, { id: receipt.id, transfer_id: receipt.transferId, size: receipt.size, sha256: receipt.sha256 });
  }

  async function downloadStream(res: HttpResponse, clientId: string, id: string): Promise<void> {
    const download = await transfers.streams.open(clientId, id);
    res.writeHead(200, {
      "content-type": "application/octet-stream",
      "content-length": String(download.size),
      // RFC 9530: the SHA-256 of the whole content, base64 between colons.
      "repr-digest": `sha-256=:${Buffer.from(download.sha256, "hex").toString("base64")}:`,
      "cache-control": "no-store",
    });
    let closed = false;
    res.once("close", () => (closed = true));
    const write = (chunk: Uint8Array): boolean => (res.write as (chunk: Uint8Array) => boolean).call(res, chunk);
    try {
      for await (const chunk of download.chunks()) {
        if (closed) return;
        if (!write(chunk)) await settled(res, "drain");
      }
    } catch {
      // Headers are out: all that is left to say is that the body is incomplete.
      res.destroy();
      return;
    }
    if (closed) return;
    res.end();
    if (!res.writableFinished && !res.destroyed) await settled(res, "finish");
    // Only a download that went out whole consumes the stream; a client that left midway may try again.
    if (res.writableFinished) await download.downloaded();
  }

  async function route(req: HttpRequest, res: HttpResponse, path: string): Promise<void> {
    const clientId = (await authenticator.client(credentialsOf(req))).name;
    const method = req.method ?? "GET";
    if (path === sealedPayloadsPath) return method === "POST" ? sealPayload(req, res, clientId) : methodNotAllowed("POST");
    if (path === streamsPath) return method === "POST" ? uploadStream(req, res, clientId) : methodNotAllowed("POST");
    const id = decodedSegment(streamPath.exec(path)?.[1] ?? "");
    return method === "GET" ? downloadStream(res, clientId, id) : methodNotAllowed("GET");
  }

  return {
    async handle(req, res) {
      const path = (req.url ?? "/").split("?", 1)[0] ?? "/";
      if (path !== sealedPayloadsPath && path !== streamsPath && !streamPath.test(path)) return false;
      try {
        await route(req, res, path);
      } catch (error) {
        sendError(req, res, error, logger);
      }
      return true;
    },
  };
}

function sendError(req: HttpRequest, res: HttpResponse, error: unknown, logger: Logger): void {
  const status = toConnectError(error, { contractCodes: true });
  if (!isExpected(error)) {
    // A client that went away mid-upload is no failure of ours.
    if (!req.complete && (req.destroyed || res.destroyed)) logger.info({ category: "canceled", path: req.url }, "transfer abandoned by the client");
    // Only the category and a code: a storage error may quote what it failed to store.
    else logger.error({ category: "storage", error_code: (error as { code?: unknown }).code, path: req.url }, "transfer failed");
  }
  if (res.headersSent) return void res.destroy();
  const reason = error instanceof AxonError ? error.reason : undefined;
  const headers: Record<string, string> = { "content-type": "application/json" };
  status.metadata.forEach((value, name) => (headers[name] = value));
  if (reason === "METHOD_NOT_ALLOWED") headers.allow = error instanceof AxonError ? (error.metadata.allow ?? "") : "";
  // An unread request body would otherwise be read to its end to keep the connection: close it instead.
  const hasBody = (req.headers["content-length"] ?? "0") !== "0" || req.headers["transfer-encoding"] !== undefined;
  if (hasBody && !req.readableEnded && "httpVersionMajor" in req && req.httpVersionMajor === 1) headers.connection = "close";
  res.writeHead((reason !== undefined ? httpStatusOfReason[reason] : undefined) ?? httpStatusOf(status.code), headers);
  res.end(JSON.stringify(statusJson(status)));
}

/** Resolves on `event` or when the response closes (the client left), whichever comes first. */
function settled(res: HttpResponse, event: "drain" | "finish"): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off(event, done);
      res.off("close", done);
      resolve();
    };
    res.on(event, done);
    res.on("close", done);
  });
}

function decodedSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment; // malformed escapes name no stream
  }
}

function methodNotAllowed(allow: string): never {
  throw new AxonError(Code.InvalidArgument, "METHOD_NOT_ALLOWED", "this route does not take this method", { metadata: { allow } });
}

function header(req: HttpRequest, name: string): string | undefined {
  const value = req.headers[name];
  return typeof value === "string" && value !== "" ? value : undefined;
}

function contentLength(req: HttpRequest): number | undefined {
  const value = header(req, "content-length");
  return value !== undefined && /^\d{1,15}$/.test(value) ? Number(value) : undefined;
}

/** The whole body, refused as soon as it grows past `limit` bytes. */
async function readBounded(req: HttpRequest, limit: number): Promise<Buffer> {
  const pieces: Uint8Array[] = [];
  let size = 0;
  for await (const piece of bodyOf(req)) {
    size += piece.byteLength;
    if (size > limit) {
      for (const kept of pieces) kept.fill(0);
      throw payloadTooLarge(limit);
    }
    pieces.push(piece);
  }
  const body = Buffer.concat(pieces, size);
  for (const piece of pieces) piece.fill(0);
  return body;
}

/**
 * The request body, piece by piece. Leaving the loop early does not destroy the request (which would take the socket
 * with it): the refusal still has to be answered.
 */
function bodyOf(req: HttpRequest): AsyncIterable<Uint8Array> {
  return {
    [Symbol.asyncIterator]() {
      const pieces = (req as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
      return { next: () => pieces.next() };
    },
  };
}

