import http from "node:http";
import http2 from "node:http2";
import { fromBinary } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { ErrorInfoSchema } from "../../src/gen/google/rpc/error_details_pb.js";
import { StatusSchema } from "../../src/gen/google/rpc/status_pb.js";
import { envelopesOf } from "../support/envelopes.js";

/**
 * Raw clients for the conformance suite: each sends exactly the bytes a case describes (a real client library would
 * refuse to send most of them) and reads the answer back into one shape, whatever the protocol framed it as.
 */

/** What a call came to, read the way a client of its protocol reads it. */
export interface Outcome {
  httpStatus: number;
  /** The RPC status code (0 for OK). */
  code: Code | 0;
  /** ErrorInfo's reason, when the error carries one. */
  reason: string | undefined;
  /** Response headers (gRPC-Web and Connect trailers folded in, by name). */
  headers: Record<string, string>;
  trailers: Record<string, string>;
  /** The response messages' payloads (for Connect unary: the body). */
  messages: Buffer[];
}

export type Wire = "h1" | "h2";

export interface RawRequest {
  path: string;
  method?: string;
  headers: Record<string, string>;
  body?: Buffer;
  /** h2 only: reset the stream (CANCEL) right after the body, before END_STREAM. */
  resetBeforeEnd?: boolean;
}

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  trailers: Record<string, string>;
  body: Buffer;
}

/** One HTTP/2 connection per server, shared by the cases of a file (as gRPC clients share theirs). */
export class H2Client {
  private session: http2.ClientHttp2Session | undefined;

  constructor(private readonly url: string) {}

  send(request: RawRequest): Promise<RawResponse> {
    this.session ??= http2.connect(this.url);
    const stream = this.session.request({ ":method": request.method ?? "POST", ":path": request.path, ...request.headers }, { endStream: false });
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let status = 0;
      let headers: Record<string, string> = {};
      let trailers: Record<string, string> = {};
      stream.on("response", (head) => {
        status = Number(head[":status"]);
        headers = flat(head);
      });
      stream.on("trailers", (tail) => (trailers = flat(tail)));
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("close", () => resolve({ status, headers, trailers, body: Buffer.concat(chunks) }));
      stream.on("error", (error) => (request.resetBeforeEnd ? undefined : reject(error)));
      if (request.resetBeforeEnd) {
        stream.write(request.body ?? Buffer.alloc(0), () => stream.close(http2.constants.NGHTTP2_CANCEL));
        return;
      }
      stream.end(request.body ?? Buffer.alloc(0));
    });
  }

  close(): void {
    this.session?.close();
  }
}

/** One HTTP/1.1 request on a connection of its own. */
export function sendH1(url: string, request: RawRequest): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const body = request.body ?? Buffer.alloc(0);
    const req = http.request(
      `${url}${request.path}`,
      { method: request.method ?? "POST", headers: { ...request.headers, "content-length": String(body.byteLength) }, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => resolve({ status: res.statusCode!, headers: flat(res.headers), trailers: flat(res.trailers), body: Buffer.concat(chunks) }));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

function flat(headers: Record<string, unknown>): Record<string, string> {
  const result: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) result[name] = Array.isArray(value) ? value.join(", ") : String(value);
  }
  return result;
}

/** A gRPC answer: the status in the trailers, or in the headers of a trailers-only answer. */
export function grpcOutcome(response: RawResponse): Outcome {
  const status = { ...response.headers, ...response.trailers };
  return {
    httpStatus: response.status,
    code: status["grpc-status"] === undefined ? Code.Unknown : (Number(status["grpc-status"]) as Code),
    reason: reasonOf(status["grpc-status-details-bin"]),
    headers: response.headers,
    trailers: response.trailers,
    messages: envelopesOf(response.body).map((message) => message.payload),
  };
}

/** A gRPC-Web answer: messages, then a trailers frame (flag 0x80), or a trailers-only answer in the headers. */
export function grpcWebOutcome(response: RawResponse, text = false): Outcome {
  const body = text ? decodeBase64Chunks(response.body) : response.body;
  const frames = response.status === 200 ? envelopesOf(body) : [];
  const trailers: Record<string, string> = {};
  for (const frame of frames.filter((candidate) => (candidate.flags & 0x80) !== 0)) {
    for (const line of frame.payload.toString("latin1").split("\r\n")) {
      const colon = line.indexOf(":");
      if (colon > 0) trailers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
  }
  return grpcOutcome({
    ...response,
    trailers,
    body: Buffer.concat(frames.filter((frame) => (frame.flags & 0x80) === 0).map((frame) => frameOf(frame.flags, frame.payload))),
  });
}

/** A Connect unary answer: 200 and the message, or the error JSON with the code's HTTP status. */
export function connectUnaryOutcome(response: RawResponse): Outcome {
  if (response.status === 200) return { httpStatus: 200, code: 0, reason: undefined, headers: response.headers, trailers: {}, messages: [response.body] };
  const error = parseJson(response.body);
  return { httpStatus: response.status, code: codeOfName(error?.code), reason: connectReason(error), headers: response.headers, trailers: {}, messages: [] };
}

/** A Connect stream's answer: messages, then the end-of-stream message (flag 2) with the error, if any. */
export function connectStreamOutcome(response: RawResponse): Outcome {
  if (response.status !== 200) return connectUnaryOutcome(response);
  const frames = envelopesOf(response.body);
  const end = frames.find((frame) => (frame.flags & 0b10) !== 0);
  const error = end ? parseJson(end.payload)?.error : { code: "unknown" };
  return {
    httpStatus: 200,
    code: error === undefined ? 0 : codeOfName(error.code),
    reason: error === undefined ? undefined : connectReason(error),
    headers: response.headers,
    trailers: {},
    messages: frames.filter((frame) => (frame.flags & 0b10) === 0).map((frame) => frame.payload),
  };
}

/** gRPC-Web text: each chunk the server wrote is base64 on its own (padding may end any of them). */
function decodeBase64Chunks(body: Buffer): Buffer {
  const text = body.toString("latin1");
  return Buffer.concat(text.split(/(?<==)(?=[^=])/).map((part) => Buffer.from(part, "base64")));
}

function frameOf(flags: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head[0] = flags;
  head.writeUInt32BE(payload.byteLength, 1);
  return Buffer.concat([head, payload]);
}

function reasonOf(statusDetails: string | undefined): string | undefined {
  if (statusDetails === undefined) return undefined;
  const status = fromBinary(StatusSchema, Buffer.from(statusDetails, "base64"));
  const info = status.details.find((detail) => detail.typeUrl.endsWith("google.rpc.ErrorInfo"));
  return info && fromBinary(ErrorInfoSchema, info.value).reason;
}

function connectReason(error: { details?: { type: string; value: string }[] } | undefined): string | undefined {
  const info = error?.details?.find((detail) => detail.type === "google.rpc.ErrorInfo");
  return info && fromBinary(ErrorInfoSchema, Buffer.from(info.value, "base64")).reason;
}

function parseJson(bytes: Buffer): any {
  try {
    return JSON.parse(bytes.toString("utf8"));
  } catch {
    return undefined;
  }
}

/** Connect's code names (`deadline_exceeded`) as numbers. */
function codeOfName(name: unknown): Code {
  if (typeof name !== "string") return Code.Unknown;
  const key = name.replace(/(^|_)([a-z])/g, (_match, _underscore, letter: string) => letter.toUpperCase()) as keyof typeof Code;
  return (Code[key] as Code | undefined) ?? Code.Unknown;
}
