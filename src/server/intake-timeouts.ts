import type http from "node:http";
import http2 from "node:http2";

const { NGHTTP2_CANCEL, NGHTTP2_NO_ERROR, NGHTTP2_STREAM_STATE_HALF_CLOSED_REMOTE, NGHTTP2_STREAM_STATE_CLOSED } = http2.constants;

/**
 * An HTTP/1.1 request's body has `timeoutMs` from its headers to its last byte: a stalled or dribbling upload is
 * answered 408 (by `answerTimeout`) and its connection closed. A response that went out before the body was read
 * closes the connection too: the rest of the body would only be read to be dropped.
 */
export function watchHttp1Body(req: http.IncomingMessage, res: http.ServerResponse, timeoutMs: number, answerTimeout: (res: http.ServerResponse) => void): void {
  const { socket } = req;
  const closeAfterResponse = (): void => void socket.end(() => socket.destroy());
  const deadline = new BodyDeadline(timeoutMs, () => {
    if (req.complete) return;
    if (res.headersSent) return void socket.destroy();
    res.setHeader("connection", "close");
    answerTimeout(res);
    closeAfterResponse();
  });
  deadlines.set(req, deadline);
  res.once("close", () => deadline.clear());
  res.once("finish", () => {
    if (!req.complete) closeAfterResponse();
  });
}

/**
 * An HTTP/2 request's body has `timeoutMs` from its headers to its END_STREAM; then the stream is reset (CANCEL),
 * which leaves the connection's other streams alone.
 */
export function watchHttp2Body(stream: http2.ServerHttp2Stream, timeoutMs: number): void {
  if (stream.endAfterHeaders) return;
  const deadline = new BodyDeadline(timeoutMs, () => {
    if (!requestEnded(stream)) stream.close(NGHTTP2_CANCEL);
  });
  deadlines.set(stream, deadline);
  stream.once("close", () => deadline.clear());
}

/**
 * Gives an authenticated request's body `extraMs` more: a route that takes large bodies from known clients (stream
 * uploads) extends the deadline in proportion to the size they declare, once it has checked who sends it.
 */
export function extendBodyDeadline(req: http.IncomingMessage | http2.Http2ServerRequest, extraMs: number): void {
  deadlines.get("stream" in req ? req.stream : req)?.extend(extraMs);
}

const deadlines = new WeakMap<object, BodyDeadline>();

class BodyDeadline {
  private timer: NodeJS.Timeout;
  private readonly due: number;
  private extraMs = 0;
  private cleared = false;

  constructor(
    timeoutMs: number,
    private readonly expire: () => void,
  ) {
    this.due = performance.now() + timeoutMs;
    this.timer = setTimeout(expire, timeoutMs);
  }

  extend(extraMs: number): void {
    if (this.cleared) return;
    this.extraMs += extraMs;
    clearTimeout(this.timer);
    this.timer = setTimeout(this.expire, Math.max(0, this.due + this.extraMs - performance.now()));
  }

  clear(): void {
    this.cleared = true;
    clearTimeout(this.timer);
  }
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
