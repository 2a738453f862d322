import { readFile } from "node:fs/promises";
import path from "node:path";
import { projectRoot } from "../project-root.js";
import type { HttpRequest, HttpResponse } from "./listener.js";

/** Where `npm run build:web` (vite) writes the console. */
export const webConsoleDir = path.join(projectRoot, "dist", "web");

const contentTypes: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".json": "application/json",
  ".map": "application/json",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".woff2": "font/woff2",
};

/**
 * The console runs only its own bundles and talks only to its own origin; no page elsewhere may frame it (a framed
 * Operator tab could be steered into a click on Approve). X-Frame-Options says the same to browsers before CSP 2.
 */
const securityHeaders = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; " +
    "manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
};

// Vite names every asset after its content hash: a URL never changes meaning, so browsers may keep it for good.
const immutable = "public, max-age=31536000, immutable";
const assetName = /^\/assets\/[A-Za-z0-9._-]+$/;

export interface WebConsole {
  /** Answers GET/HEAD `/` and `/assets/*`; false for any other request, left to the next handler. */
  handle(req: HttpRequest, res: HttpResponse): Promise<boolean>;
}

/** Serves the built web console from `distDir`: `index.html` at `/`, the hashed bundles under `/assets/`, the favicon. */
export function serveWebConsole(distDir: string = webConsoleDir): WebConsole {
  return {
    async handle(req, res) {
      if (req.method !== "GET" && req.method !== "HEAD") return false;
      const pathname = (req.url ?? "/").split("?", 1)[0] ?? "/";
      if (pathname === "/" || pathname === "/index.html") {
        // index.html names the current bundles, so it is revalidated every time.
        return send(req, res, path.join(distDir, "index.html"), "no-cache", notBuilt);
      }
      // Browsers ask for /favicon.ico whatever the page says: both names answer the one SVG icon.
      if (pathname === "/favicon.svg" || pathname === "/favicon.ico") {
        return send(req, res, path.join(distDir, "favicon.svg"), "public, max-age=86400", sendNotFound, contentTypes[".svg"]);
      }
      // Only plain file names directly under assets/: no `..`, no encoded separators, nothing to traverse with.
      if (!pathname.startsWith("/assets/")) return false;
      if (!assetName.test(pathname) || pathname.includes("..")) return sendNotFound(res);
      return send(req, res, path.join(distDir, pathname), immutable, sendNotFound);
    },
  };
}

async function send(
  req: HttpRequest,
  res: HttpResponse,
  file: string,
  cacheControl: string,
  missing: (res: HttpResponse) => boolean,
  contentType = contentTypes[path.extname(file)] ?? "application/octet-stream",
): Promise<boolean> {
  let body: Buffer;
  try {
    body = await readFile(file);
  } catch {
    return missing(res);
  }
  res.writeHead(200, {
    "content-type": contentType,
    "content-length": body.length,
    "cache-control": cacheControl,
    ...securityHeaders,
  });
  if (req.method === "HEAD") res.end();
  else res.end(body);
  return true;
}

function sendNotFound(res: HttpResponse): boolean {
  res.writeHead(404, { "content-type": "text/plain; charset=utf-8" });
  res.end("not found\n");
  return true;
}

function notBuilt(res: HttpResponse): boolean {
  res.writeHead(404, { "content-type": "text/plain; charset=utf-8" });
  res.end("The web console is not built: run `npm run build:web` (npm ci does it).\n");
  return true;
}
