import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import tls from "node:tls";
import { rememberCertificateNames } from "./client-certificate.js";
import type { TlsCredentials } from "./tls-credentials.js";
import { closeIdleSession, Http1Response, resetUnreadHttp2Body, watchHttp1Body, watchHttp2Body } from "./intake-timeouts.js";

/**
 * Connections the kernel may hold before they are accepted. Node's default (511) overflows when a thousand clients
 * connect at once while the event loop is busy, and some of the overflowed handshakes end reset 15 s later
 * (docs/benchmarks.md, Load). The kernel caps it at net.core.somaxconn.
 */
const acceptBacklog = 4096;

export type HttpRequest = http.IncomingMessage | http2.Http2ServerRequest;
export type HttpResponse = http.ServerResponse | http2.Http2ServerResponse;
export type RequestHandler = (req: HttpRequest, res: HttpResponse) => void;
/**
 * Gets the first look at each HTTP/2 stream, headers in, body unread; returns true when it serves the stream itself
 * (the gRPC fast path), false to leave it to the request handler.
 */
export type Http2StreamHandler = (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => boolean;

export interface ListenerOptions {
  port: number;
  host: string;
  /** HTTP/2 streams meet this before the request handler. */
  onHttp2Stream?: Http2StreamHandler;
  /** From the first byte to the end of a request's headers; also how long a socket may send nothing at all. */
  headersTimeoutMs?: number;
  /** From a request's headers to the end of its body. */
  bodyTimeoutMs?: number;
  /** How long an HTTP/2 connection may stay open without a stream. */
  idleTimeoutMs?: number;
  /** Writes the 408 for an HTTP/1.1 body that did not arrive in time (the connection is closed after it). */
  answerBodyTimeout?: (res: http.ServerResponse) => void;
  maxHeaderBytes?: number;
  /** TLS on the port (ALPN picks HTTP/2 or HTTP/1.1); cleartext is then refused. */
  tls?: TlsCredentials | undefined;
}

export interface Listener {
  readonly port: number;
  /**
   * Stops accepting, lets open requests and streams finish for `graceMs`, then calls `onGraceExpired`
   * (to cancel what is still running) and destroys what is left.
   */
  close(graceMs: number, onGraceExpired?: () => void): Promise<void>;
}

/**
 * One TCP port for HTTP/1.1 and HTTP/2 (gRPC needs HTTP/2, browsers and curl speak HTTP/1.1). In cleartext we peek at
 * the first bytes and hand the socket over (Node's `allowHTTP1` only works with TLS); with TLS, ALPN decides.
 */
export async function listen(handler: RequestHandler, options: ListenerOptions): Promise<Listener> {
  const maxHeaderSize = options.maxHeaderBytes ?? 16 * 1024;
  const headersTimeoutMs = options.headersTimeoutMs ?? 20_000;
  const bodyTimeoutMs = options.bodyTimeoutMs ?? 30_000;
  const idleTimeoutMs = options.idleTimeoutMs ?? 60_000;
  const answerBodyTimeout = options.answerBodyTimeout ?? ((res: http.ServerResponse) => void res.writeHead(408).end());
  const http1Server = http.createServer(
    {
      maxHeaderSize,
      // Bodies have their own deadline (watchHttp1Body), which a slow response never trips.
      requestTimeout: 0,
      headersTimeout: headersTimeoutMs,
      // How often http looks for connections past headersTimeout: often enough that the timeout means what it says.
      connectionsCheckingInterval: Math.min(1_000, headersTimeoutMs / 2),
      keepAliveTimeout: 5_000,
      ServerResponse: Http1Response,
    },
    (req, res) => {
      watchHttp1Body(req, res, bodyTimeoutMs, answerBodyTimeout);
      handler(req, res);
    },
  );
  // This server never listens itself (the peeking TCP server hands it sockets), but "listening" is what starts
  // its connection tracking: headersTimeout/requestTimeout and closeIdleConnections depend on it.
  http1Server.emit("listening");
  // The sessions' server sees every stream first; a stream the stream handler leaves goes to a second server object
  // that only builds the compatibility request and response (it never listens nor owns a session).
  const http2Options = { maxSendHeaderBlockLength: maxHeaderSize, settings: { maxHeaderListSize: maxHeaderSize } };
  const http2Server = http2.createServer(http2Options);
  const http2Compat = http2.createServer(http2Options, (req, res) => {
    resetUnreadHttp2Body(res);
    handler(req, res);
  });
  const onHttp2Stream = options.onHttp2Stream ?? (() => false);
  http2Server.on("stream", (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, flags: number, rawHeaders: string[]) => {
    watchHttp2Body(stream, bodyTimeoutMs);
    if (!onHttp2Stream(stream, headers)) http2Compat.emit("stream", stream, headers, flags, rawHeaders);
  });
  const sockets = new Set<net.Socket>();
  // Connected but not yet handed to a server: nothing is in flight on them.
  const undecided = new Set<net.Socket>();
  const sessions = new Set<http2.ServerHttp2Session>();
  http2Server.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
    closeIdleSession(session, idleTimeoutMs);
  });

  const secure = options.tls && secureLayer(options.tls, headersTimeoutMs);
  // http.Server sets TCP_NODELAY on sockets it accepts itself; these it is handed, so say it here: streamed
  // messages are small writes that Nagle's algorithm would hold back for the peer's acknowledgement.
  const tcpServer = net.createServer({ noDelay: true }, (socket) => {
    sockets.add(socket);
    undecided.add(socket);
    socket.once("close", () => {
      sockets.delete(socket);
      undecided.delete(socket);
    });
    socket.on("error", () => socket.destroy());
    socket.setTimeout(headersTimeoutMs, () => socket.destroy());
    if (secure) {
      return secure.accept(socket, (tlsSocket, isHttp2) => {
        undecided.delete(socket);
        socket.setTimeout(0);
        (isHttp2 ? http2Server : http1Server).emit("connection", tlsSocket);
      });
    }
    peek(socket, (head, isHttp2) => {
      undecided.delete(socket);
      socket.setTimeout(0);
      socket.unshift(head);
      (isHttp2 ? http2Server : http1Server).emit("connection", socket);
      process.nextTick(() => socket.resume());
    });
  });

  await new Promise<void>((resolve, reject) => {
    tcpServer.once("error", reject);
    tcpServer.listen(options.port, options.host, acceptBacklog, () => resolve());
  });
  const address = tcpServer.address() as net.AddressInfo;

  return {
    port: address.port,
    async close(graceMs, onGraceExpired) {
      secure?.close();
      const closed = new Promise<void>((resolve) => tcpServer.close(() => resolve()));
      // GOAWAY lets HTTP/2 clients finish their streams and open no new ones.
      for (const session of sessions) session.close();
      http1Server.close();
      for (const socket of undecided) socket.destroy();
      const waitForSockets = async (ms: number): Promise<void> => {
        const deadline = performance.now() + ms;
        while (sockets.size > 0 && performance.now() < deadline) {
          // Keep-alive connections become idle as their last response ends: close each as it does.
          http1Server.closeIdleConnections();
          await sleep(25);
        }
      };
      await waitForSockets(graceMs);
      if (sockets.size > 0) {
        onGraceExpired?.();
        // Give cancelled handlers a moment to send their final status before the sockets go.
        await waitForSockets(500);
        for (const socket of sockets) socket.destroy();
      }
      await closed;
    },
  };
}

/**
 * The TLS layer between the TCP socket and the same HTTP/1.1 and HTTP/2 servers: ALPN says which one a connection
 * speaks (no ALPN: HTTP/1.1), TLS 1.2 at least with Node's default ciphers. A reloaded certificate reaches new
 * connections and leaves open ones alone. With a client CA, a connection without a certificate from it fails in the
 * handshake.
 */
function secureLayer(credentials: TlsCredentials, handshakeTimeout: number) {
  const requestCert = credentials.requestsClientCertificates;
  const server = tls.createServer({
    ...credentials.current(),
    minVersion: "TLSv1.2",
    ALPNProtocols: ["h2", "http/1.1"],
    requestCert,
    rejectUnauthorized: requestCert,
    handshakeTimeout,
  });
  const stopWatching = credentials.watch((options) => server.setSecureContext({ ...options, minVersion: "TLSv1.2" }));
  // The TLS server wraps each TCP socket it is handed out of sight; the peer's address and port (unique among open
  // connections to one port) find the handshake's callback again.
  const handshaking = new Map<string, (tlsSocket: tls.TLSSocket) => void>();
  const peerOf = (socket: net.Socket) => `${socket.remoteAddress}|${socket.remotePort}`;
  server.on("secureConnection", (tlsSocket: tls.TLSSocket) => {
    const onSecure = handshaking.get(peerOf(tlsSocket));
    if (!onSecure) return void tlsSocket.destroy();
    rememberCertificateNames(tlsSocket);
    onSecure(tlsSocket);
  });
  return {
    accept(socket: net.Socket, onSecure: (tlsSocket: tls.TLSSocket, isHttp2: boolean) => void): void {
      const peer = peerOf(socket);
      handshaking.set(peer, (tlsSocket) => {
        handshaking.delete(peer);
        onSecure(tlsSocket, tlsSocket.alpnProtocol === "h2");
      });
      socket.once("close", () => handshaking.delete(peer));
      server.emit("connection", socket);
    },
    close: stopWatching,
  };
}

/** Waits for enough bytes to tell the HTTP/2 preface ("PRI * HTTP/2.0") from an HTTP/1.1 request line. */
function peek(socket: net.Socket, onHead: (head: Buffer, isHttp2: boolean) => void): void {
  let head = Buffer.alloc(0);
  const onData = (chunk: Buffer): void => {
    head = Buffer.concat([head, chunk]);
    const start = head.subarray(0, 3).toString("latin1");
    if (head.length < 3 && "PRI".startsWith(start)) return;
    socket.off("data", onData);
    socket.pause();
    onHead(head, start === "PRI");
  };
  socket.on("data", onData);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
