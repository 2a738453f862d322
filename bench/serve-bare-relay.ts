import http from "node:http";
import type { AddressInfo } from "node:net";
import { serveParent } from "./server-process.js";

/**
 * The floor a brokered chat completion is measured against: a bare node:http relay that does what any proxy must
 * (read the request, put the upstream's key in, send it on, stream the answer back with backpressure) and nothing
 * else (no authentication, policy, admission, accounting or logging).
 */
const upstreamPort = Number(process.env.BENCH_UPSTREAM_PORT);
const key = process.env.BENCH_UPSTREAM_KEY ?? "";
const agent = new http.Agent({ keepAlive: true });

const server = http.createServer((req, res) => {
  const pieces: Buffer[] = [];
  req.on("data", (piece: Buffer) => pieces.push(piece));
  req.on("end", () => {
    const body = Buffer.concat(pieces);
    const headers = { "content-type": "application/json", "content-length": String(body.byteLength), authorization: `Bearer ${key}` };
    const call = http.request({ host: "127.0.0.1", port: upstreamPort, path: req.url, method: "POST", headers, agent }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, { "content-type": answer.headers["content-type"] ?? "application/json" });
      answer.pipe(res);
    });
    call.on("error", () => res.writeHead(502).end());
    res.on("close", () => res.writableFinished || call.destroy());
    call.end(body);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => {
  serveParent({ port: (server.address() as AddressInfo).port }, () => new Promise((resolve) => server.close(() => resolve())));
});
