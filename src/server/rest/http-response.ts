import type * as http from "node:http";
import type * as http2 from "node:http2";
import type { JsonValue } from "@bufbuild/protobuf";
import type { ConnectError } from "@connectrpc/connect";
import { requestTooLargeReason } from "../request-body.js";
import { visibleHeaders } from "../response-headers.js";
import { errorInfoOf, httpStatusOf, statusJson } from "../status.js";

export type RestServerResponse = http.ServerResponse | http2.Http2ServerResponse;

/**
 * What the transcoder needs of a response, met by both the HTTP/1 and the HTTP/2 compatibility
 * response (their own overloads make the union uncallable).
 */
export interface ResponseSink {
  statusCode: number;
  readonly headersSent: boolean;
  readonly writableEnded: boolean;
  setHeader(name: string, value: string | number | readonly string[]): unknown;
  writeHead(statusCode: number, headers?: Record<string, string>): unknown;
  /** HTTP/1 only: writeHead alone waits for the first body write. */
  flushHeaders?(): void;
  write(chunk: string): boolean;
  end(): unknown;
  end(chunk: string | Buffer): unknown;
  once(event: "close" | "drain" | "finish", listener: () => void): unknown;
  off(event: "close" | "drain" | "finish", listener: () => void): unknown;
}

export function writeJson(res: ResponseSink, status: number, json: JsonValue, headers?: Headers, own?: Record<string, string>): void {
  writeJsonBody(res, status, Buffer.from(JSON.stringify(json)), headers, own);
}

/**
 * JSON already encoded. `headers` are the service's (filtered), `own` the server's for this call (its request id):
 * both go into the one writeHead, with nothing set on the response before it.
 */
export function writeJsonBody(res: ResponseSink, status: number, body: Buffer, headers?: Headers, own?: Record<string, string>): void {
  const head = visibleHeaders({ "content-type": "application/json", "content-length": String(body.byteLength), ...own }, headers);
  res.writeHead(status, head);
  res.end(body);
}

/**
 * A plain HTTP error: google.rpc.Status JSON with the mapped HTTP status. `close` ends an HTTP/1.1 connection whose
 * request body was left unread.
 */
export function writeStatusError(res: ResponseSink, error: ConnectError, options: { status?: number; headers?: Headers; own?: Record<string, string>; close?: boolean } = {}): void {
  if (options.close) res.setHeader("connection", "close");
  writeJson(res, options.status ?? restHttpStatusOf(error), statusJson(error), options.headers, options.own);
}

/** The standard code mapping, except an oversized body, which HTTP clients know as 413. */
export function restHttpStatusOf(error: ConnectError): number {
  return errorInfoOf(error)?.reason === requestTooLargeReason ? 413 : httpStatusOf(error.code);
}

/** The service's own response headers, without the Connect/gRPC protocol ones. */
export function setHeaders(res: ResponseSink, headers: Headers): void {
  for (const [name, value] of Object.entries(visibleHeaders({}, headers))) res.setHeader(name, value);
}
