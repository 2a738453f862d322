import http2 from "node:http2";
import { fromBinary, toBinary, type DescMethod, type Message } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { acceptsGzip, compressMinBytes, gzip } from "../compression.js";
import { parseGrpcTimeout } from "../deadlines.js";
import { encodedOnce } from "../frozen-answers.js";
import { headerIn } from "../http-request.js";
import type { Http2StreamHandler } from "../listener.js";
import type { CallPipeline } from "../pipeline/call-pipeline.js";
import { DirectCall } from "../pipeline/direct-call.js";
import { requestUndecodable } from "../request-body.js";
import { visibleHeaders } from "../response-headers.js";
import type { ResolvedMethod, RpcMethods } from "../rpc-methods.js";
import { frameMessage, UnaryMessageReader } from "./message-frames.js";
import { grpcStatusHeaders } from "./status-headers.js";

export interface GrpcUnaryOptions {
  pipeline: CallPipeline;
  maxRequestBytes: number;
  shutdownSignal: AbortSignal;
  /**
   * Methods without side effects (their REST rule is a GET): a reset that arrives with their request's end need not be
   * waited for, since running them for a client that has gone changes nothing.
   */
  readOnly?: ReadonlySet<DescMethod>;
}

const contentType = "application/grpc";

/**
 * The gRPC fast path as the listener's HTTP/2 stream handler: it takes the unary calls it serves and leaves every other
 * stream (gRPC streams, the JSON codec, other compressions, everything not gRPC) to the request handler.
 */
export function grpcUnaryRoute(methods: RpcMethods, options: GrpcUnaryOptions): Http2StreamHandler {
  return (stream, headers) => {
    if (!isPlainGrpc(headers)) return false;
    const rpc = methods.resolve(headers[":path"] ?? "");
    if (rpc?.spec.kind !== "unary") return false;
    void serveGrpcUnary(stream, headers, rpc, options);
    return true;
  };
}

// POST, protobuf, no compression or gzip.
function isPlainGrpc(headers: http2.IncomingHttpHeaders): boolean {
  const type = headers["content-type"];
  const encoding = headers["grpc-encoding"];
  return (
    headers[":method"] === "POST" &&
    (type === contentType || type === "application/grpc+proto") &&
    (encoding === undefined || encoding === "identity" || encoding === "gzip")
  );
}

/**
 * One unary gRPC call, framed on the HTTP/2 stream itself: the pipeline opens it on the headers, the one message is
 * read and decoded, the implementation answers, and the answer goes out as headers, one message and trailers (or, for
 * a failure, a trailers-only response). A reset stream cancels the call.
 */
async function serveGrpcUnary(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, target: ResolvedMethod, options: GrpcUnaryOptions): Promise<void> {
  const { method } = target.spec;
  const header = (name: string): string | undefined => headerIn(headers, name);
  // A reset stream errors too; "close" (below) is where that ends the call.
  stream.on("error", ignore);
  const opened = options.pipeline.begin({ method, protocol: "grpc", header, pathAgentName: target.pathAgentName, socket: stream.session?.socket });
  const call = opened instanceof Promise ? await opened : opened;
  const answerError = (status: ConnectError): void => {
    if (stream.destroyed) return;
    stream.respond({ ":status": 200, "content-type": contentType, "x-request-id": call.requestId, ...grpcStatusHeaders(status) }, { endStream: true });
    // A request refused before its end may still be arriving: stop it instead of reading it.
    if (!stream.readableEnded) stream.close(http2.constants.NGHTTP2_NO_ERROR);
  };
  let timeoutMs: number | undefined;
  try {
    if (call.refusal !== undefined) throw call.refusal;
    timeoutMs = parseGrpcTimeout(header("grpc-timeout"));
  } catch (error) {
    return answerError(call.finish(error)!);
  }

  const context = new DirectCall({
    call,
    spec: target.spec,
    protocolName: "grpc",
    requestMethod: "POST",
    headers,
    path: header(":path") ?? "/",
    timeoutMs,
    shutdownSignal: options.shutdownSignal,
    answerError,
  });
  if (stream.destroyed) context.abort(new ConnectError("the client cancelled the call", Code.Canceled));
  stream.once("close", () => {
    if (!context.isAnswered) context.abort(new ConnectError("the client cancelled the call", Code.Canceled));
  });
  const reader = new UnaryMessageReader(options.maxRequestBytes, header("grpc-encoding") === "gzip" ? "gzip" : "identity");
  const tally = call.bodyTally(stream);
  stream.on("data", (chunk: Buffer) => {
    if (context.isAnswered) return;
    try {
      tally?.add(chunk.byteLength);
      reader.push(chunk);
    } catch (error) {
      context.fail(error);
    }
  });
  stream.once("end", () => {
    tally?.release();
    const run = (): void => {
      if (context.isAnswered || stream.destroyed) return;
      try {
        const bytes = reader.message();
        const answering = bytes instanceof Promise ? bytes.then(answer) : answer(bytes);
        if (answering instanceof Promise) answering.catch((error: unknown) => context.fail(error));
      } catch (error) {
        context.fail(error);
      }
    };
    // A reset stream ends its readable side too, before "close" tells it was reset: a turn of the loop later the reset is
    // known, and a request the client cancelled before END_STREAM never changes anything.
    if (options.readOnly?.has(method) === true) run();
    else setImmediate(run);
  });

  // The answer goes out at once when nothing must be waited for (List: a plain request, an answer given at once, too
  // small to gzip); a promise only where something must.
  function answer(bytes: Uint8Array): void | Promise<void> {
    let request;
    try {
      request = fromBinary(method.input, bytes);
    } catch {
      throw requestUndecodable();
    }
    const answered = context.unary(request);
    return answered instanceof Promise ? answered.then(encode) : encode(answered);
  }

  function encode(message: Message): void | Promise<void> {
    const response = encodedOnce(message, toBinary, () => toBinary(method.output, message));
    if (response.byteLength >= compressMinBytes && acceptsGzip(header("grpc-accept-encoding"))) {
      return gzip(response).then((gzipped) => send(frameMessage(gzipped, true), true));
    }
    send(encodedOnce(message, frameMessage, () => frameMessage(response, false)), false);
  }

  function send(frame: Uint8Array, gzipped: boolean): void {
    if (!context.succeed() || stream.destroyed) return;
    const { header: sentHeader, trailer } = context.sentHeaders;
    const head: http2.OutgoingHttpHeaders = visibleHeaders({ "content-type": contentType, "x-request-id": call.requestId }, sentHeader);
    head[":status"] = 200;
    if (gzipped) head["grpc-encoding"] = "gzip";
    stream.respond(head, { waitForTrailers: true });
    stream.once("wantTrailers", () => stream.sendTrailers(grpcStatusHeaders(undefined, trailer)));
    stream.end(frame);
  }
}

function ignore(): void {}
