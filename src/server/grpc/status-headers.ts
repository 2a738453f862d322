import type { ConnectError } from "@connectrpc/connect";
import { visibleHeaders } from "../response-headers.js";
import { statusBinary } from "../status.js";

/**
 * The trailers carrying a call's outcome (or, when it fails before any message, the headers of a trailers-only
 * response): grpc-status, grpc-message, and the google.rpc.Status with its details in grpc-status-details-bin, plus
 * what the error asks to send (Retry-After, WWW-Authenticate).
 */
export function grpcStatusHeaders(error: ConnectError | undefined, trailer?: Headers): Record<string, string> {
  if (error === undefined) return visibleHeaders({ "grpc-status": "0" }, trailer);
  const headers = visibleHeaders({}, trailer, error.metadata);
  headers["grpc-status"] = String(error.code);
  headers["grpc-message"] = encodeGrpcMessage(error.rawMessage);
  if (error.details.length > 0) headers["grpc-status-details-bin"] = Buffer.from(statusBinary(error)).toString("base64").replace(/=+$/, "");
  return headers;
}

// The gRPC spec's percent-encoding: printable ASCII except "%" travels as is, everything else as UTF-8 %XX.
function encodeGrpcMessage(message: string): string {
  return message.replace(/[^\x20-\x24\x26-\x7e]/gu, (char) => encodeURIComponent(char));
}
