import http from "node:http";
import http2 from "node:http2";

const { NGHTTP2_CANCEL, NGHTTP2_NO_ERROR, NGHTTP2_STREAM_STATE_HALF_CLOSED_REMOTE, NGHTTP2_STREAM_STATE_CLOSED } = http2.constants;

/**
 * An HTTP/1.1 request's body has `timeoutMs` from its headers to its last byte: a stalled or dribbling upload is
 * answered 408 (by `answerTimeout`) and its connection closed. A request without a body costs nothing here, and one
 * with a body adds no listener: its response settles the watch when it ends (`Http1Response`).
 */
export function watchHttp1Body(req: http.IncomingMessage, res: http.ServerResponse, timeoutMs: number, answerTimeout: (res: http.ServerResponse) => void): void {
  if (declaresBody(req.headers)) track(req, new Http1Body(req, res, answerTimeout, performance.now() + timeoutMs));
}

class Http1Body implements ArrivingBody {
  constructor(
    private readonly req: http.IncomingMessage,
    private readonly res: http.ServerResponse,
    private readonly answerTimeout: (res: http.ServerResponse) => void,
    public due: number,
  ) {}

  // A request whose connection is gone has nothing more to wait for either.
  ended(): boolean {
    return this.req.complete || this.req.destroyed;
  }

  expire(): void {
    if (this.res.headersSent) return void this.req.socket.destroy();
    // The answer's end closes the connection (Http1Response).
    this.res.setHeader("connection", "close");
    this.answerTimeout(this.res);
  }
}

/**
 * The HTTP/1.1 server's response (http.createServer's `ServerResponse`): its end settles its request's body watch.
 * A body read in full is forgotten; one still arriving (answered before it was read, or too late) closes the
 * connection once the answer has gone out: the rest of the body would only be read to be dropped.
 */
export class Http1Response extends http.ServerResponse {
  override end(chunk?: unknown, encoding?: unknown, callback?: unknown): this {
    const ending = !this.writableEnded;
    super.end(chunk as never, encoding as BufferEncoding, callback as never);
    if (ending && bodies.delete(this.req) && !this.req.complete) {
      this.once("finish", () => {
        if (!this.req.complete) lingeringClose(this.req);
      });
    }
    return this;
  }
}

/** How long a connection closed before its request body was read goes on reading it (and dropping it) at most. */
const lingerMs = 2_000;

/**
 * Closes the connection of a response that went out before its request's body was read, gracefully (RFC 9112 §9.6):
 * the FIN goes out after the response, and what the client still sends is read and dropped until its body is complete,
 * it closes, or `lingerMs` pass. Destroying the socket at once with unread bytes would send RST, which can take the
 * response with it before the client has read it (a gRPC-Web client saw EPIPE).
 */
function lingeringClose(req: http.IncomingMessage): void {
  const { socket } = req;
  // Node lets go of a socket that closed before the answer finished: there is nothing left to close then.
  if (socket === null || socket.destroyed) return;
  // Node closes a `Connection: close` response with destroySoon, whose destroy follows the FIN at once.
  socket.removeListener("finish", socket.destroy);
  socket.end();
  const close = (): void => {
    clearTimeout(timer);
    socket.destroy();
  };
  const timer = setTimeout(close, lingerMs).unref();
  if (req.complete) return close();
  req.once("end", close);
  socket.once("end", close);
  req.resume();
}

/**
 * An HTTP/2 request's body has `timeoutMs` from its headers to its END_STREAM; then the stream is reset (CANCEL),
 * which leaves the connection's other streams alone.
 */
export function watchHttp2Body(stream: http2.ServerHttp2Stream, timeoutMs: number): void {
  if (stream.endAfterHeaders) return;
  track(stream, { due: performance.now() + timeoutMs, ended: () => requestEnded(stream), expire: () => stream.close(NGHTTP2_CANCEL) });
  stream.once("close", () => bodies.delete(stream));
}

/**
 * Gives an authenticated request's body `extraMs` more: a route that takes large bodies from known clients (stream
 * uploads) extends the deadline in proportion to the size they declare, once it has checked who sends it.
 */
export function extendBodyDeadline(req: http.IncomingMessage | http2.Http2ServerRequest, extraMs: number): void {
  const body = bodies.get("stream" in req ? req.stream : req);
  if (body) body.due += extraMs;
}

interface ArrivingBody {
  due: number;
  ended(): boolean;
  expire(): void;
}

/**
 * Request bodies still arriving, by request (or HTTP/2 stream), each with its deadline. One sweep looks them over
 * while there are any, rather than a timer per request: a deadline is met within a quarter of the timeout (at most a
 * second) after it passes, and a body that has arrived, or whose connection is gone, is dropped.
 */
const bodies = new Map<object, ArrivingBody>();
let sweep: NodeJS.Timeout | undefined;
let sweepMs = 1_000;

function track(key: object, body: ArrivingBody): void {
  bodies.set(key, body);
  const timeoutMs = body.due - performance.now();
  if (timeoutMs / 4 < sweepMs) {
    sweepMs = Math.max(10, timeoutMs / 4);
    clearInterval(sweep);
    sweep = undefined;
  }
  sweep ??= setInterval(expireDue, sweepMs).unref();
}

function expireDue(): void {
  const now = performance.now();
  for (const [key, body] of bodies) {
    if (body.ended()) bodies.delete(key);
    else if (body.due <= now) {
      // Expired while still watched: an HTTP/1.1 answer's end sees the body unread and closes the connection.
      body.expire();
      bodies.delete(key);
    }
  }
  if (bodies.size === 0) {
    clearInterval(sweep);
    sweep = undefined;
  }
}

/** Whether an HTTP/1.1 request says a body follows (RFC 9112 §6.3): a Content-Length above 0, or Transfer-Encoding. */
function declaresBody(headers: http.IncomingHttpHeaders): boolean {
  const length = headers["content-length"];
  return (length !== undefined && length !== "0") || headers["transfer-encoding"] !== undefined;
}

/**
 * A response served through the compatibility API that ended before its request did resets the stream with NO_ERROR,
 * which tells the client to stop sending (RFC 9113 §8.1). The gRPC fast path and connect-node do the same themselves.
 */
export function resetUnreadHttp2Body(res: http2.Http2ServerResponse): void {
  res.once("finish", () => {
    if (!res.stream.destroyed && !requestEnded(res.stream)) res.stream.close(NGHTTP2_NO_ERROR);
  });
}

/**
 * An HTTP/2 connection without a stream for `timeoutMs` (only the preface, or its last stream long done) is closed
 * with GOAWAY; clients reconnect when they next need one.
 */
export function closeIdleSession(session: http2.ServerHttp2Session, timeoutMs: number): void {
  let open = 0;
  let timer: NodeJS.Timeout | undefined;
  const idle = (): void => {
    timer = setTimeout(() => {
      if (!session.closed && !session.destroyed) session.close();
      // A client that ignores GOAWAY and holds the socket open goes too.
      setTimeout(() => session.destroy(), timeoutMs).unref();
    }, timeoutMs);
  };
  session.on("stream", (stream: http2.ServerHttp2Stream) => {
    open++;
    clearTimeout(timer);
    stream.once("close", () => {
      if (--open === 0 && !session.closed) idle();
    });
  });
  session.once("close", () => clearTimeout(timer));
  idle();
}

/** Whether the client has sent END_STREAM, read or not (readableEnded waits until the body is consumed). */
function requestEnded(stream: http2.ServerHttp2Stream): boolean {
  if (stream.destroyed) return true;
  const state = stream.state.state;
  return state === NGHTTP2_STREAM_STATE_HALF_CLOSED_REMOTE || state === NGHTTP2_STREAM_STATE_CLOSED;
}
