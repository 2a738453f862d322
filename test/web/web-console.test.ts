import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serveWebConsole } from "../../src/server/web-console.js";

/** A raw request: the path goes out exactly as written (fetch would resolve `..` first). */
function request(port: number, method: string, rawPath: string) {
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, method, path: rawPath }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

function startStaticServer(distDir: string) {
  const webConsole = serveWebConsole(distDir);
  const server = http.createServer(async (req, res) => {
    if (await webConsole.handle(req, res)) return;
    res.writeHead(418).end("next handler");
  });
  return new Promise<{ port: number; close: () => void }>((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve({ port: (server.address() as AddressInfo).port, close: () => server.close() })),
  );
}

describe("the web console's static files", () => {
  const root = mkdtempSync(path.join(os.tmpdir(), "axon-web-"));
  const dist = path.join(root, "dist");
  let server: { port: number; close: () => void };
  let unbuilt: { port: number; close: () => void };

  beforeAll(async () => {
    mkdirSync(path.join(dist, "assets"), { recursive: true });
    writeFileSync(path.join(dist, "index.html"), "<!doctype html><title>console</title>");
    writeFileSync(path.join(dist, "assets", "index-AbC123.js"), "console.log(1);");
    writeFileSync(path.join(dist, "assets", "index-XyZ789.css"), "body{}");
    writeFileSync(path.join(dist, "favicon.svg"), "<svg/>");
    writeFileSync(path.join(root, "secret.txt"), "do not serve");
    server = await startStaticServer(dist);
    unbuilt = await startStaticServer(path.join(root, "missing"));
  });
  afterAll(() => {
    server.close();
    unbuilt.close();
  });

  it("serves index.html at / as HTML that is revalidated every time", async () => {
    const response = await request(server.port, "GET", "/?network=hello_world");
    expect(response.status).toBe(200);
    expect(response.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(response.headers["cache-control"]).toBe("no-cache");
    expect(response.body).toContain("<title>console</title>");
  });

  it("sends a policy that allows only the console's own scripts, styles and connections, and no framing", async () => {
    for (const route of ["/", "/assets/index-AbC123.js"]) {
      const { headers } = await request(server.port, "GET", route);
      const policy = Object.fromEntries(
        String(headers["content-security-policy"])
          .split(";")
          .map((directive) => directive.trim().split(/\s+/))
          .map(([name, ...values]) => [name, values.join(" ")]),
      );
      expect(policy).toMatchObject({ "default-src": "'none'", "script-src": "'self'", "style-src": "'self'", "connect-src": "'self'", "frame-ancestors": "'none'" });
      expect(headers["x-frame-options"]).toBe("DENY");
      expect(headers["x-content-type-options"]).toBe("nosniff");
    }
  });

  it("serves hashed assets with their content type, cached for good", async () => {
    const script = await request(server.port, "GET", "/assets/index-AbC123.js");
    expect(script.status).toBe(200);
    expect(script.headers["content-type"]).toBe("text/javascript; charset=utf-8");
    expect(script.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
    expect(script.body).toBe("console.log(1);");
    const style = await request(server.port, "GET", "/assets/index-XyZ789.css");
    expect(style.headers["content-type"]).toBe("text/css; charset=utf-8");
  });

  it("answers /favicon.ico and /favicon.svg with the SVG icon", async () => {
    for (const name of ["/favicon.ico", "/favicon.svg"]) {
      const response = await request(server.port, "GET", name);
      expect(response.status, name).toBe(200);
      expect(response.headers["content-type"]).toBe("image/svg+xml");
      expect(response.body).toBe("<svg/>");
    }
  });

  it("answers HEAD with the headers and no body", async () => {
    const response = await request(server.port, "HEAD", "/assets/index-AbC123.js");
    expect(response.status).toBe(200);
    expect(response.headers["content-length"]).toBe("15");
    expect(response.body).toBe("");
  });

  it("answers 404 for a missing asset and never leaves the assets folder", async () => {
    expect((await request(server.port, "GET", "/assets/nothing.js")).status).toBe(404);
    for (const attempt of ["/assets/../secret.txt", "/assets/../../secret.txt", "/assets/%2e%2e/secret.txt", "/assets/..%2fsecret.txt", "/assets/sub/index-AbC123.js"]) {
      const response = await request(server.port, "GET", attempt);
      expect(response.status, attempt).toBe(404);
      expect(response.body).not.toContain("do not serve");
    }
  });

  it("leaves other paths and methods to the next handler", async () => {
    expect((await request(server.port, "GET", "/api/v1/list")).status).toBe(418);
    expect((await request(server.port, "GET", "/secret.txt")).status).toBe(418);
    expect((await request(server.port, "POST", "/")).status).toBe(418);
  });

  it("says how to build the console when it is not built", async () => {
    const response = await request(unbuilt.port, "GET", "/");
    expect(response.status).toBe(404);
    expect(response.body).toContain("npm run build:web");
  });
});
