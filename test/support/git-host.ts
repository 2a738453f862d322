import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { gitSandbox, type GitSandbox } from "./git.js";

/** What reached the host: method, path (no query: signed URLs stay out of test output too) and whether it was authorized. */
export interface HostRequest {
  method: string;
  path: string;
  authorized: boolean;
  /** The `Git-Protocol` header (`version=2`), when the client sent one. */
  gitProtocol: string | undefined;
}

export interface ScriptedGitHost {
  /** `http://127.0.0.1:<port>`: the host's base URL. */
  url: string;
  /** Where the bare repositories live (`<root>/<owner>/<name>.git`). */
  root: string;
  requests: HostRequest[];
  /** The token the host accepts (HTTP Basic password, any user name, or a bearer). */
  token: string;
  /** Secrets of the host's LFS storage that must never reach an agent: URL signatures and the storage header. */
  storageSecrets: string[];
  /** Smart-HTTP body bytes the host received and sent (headers not counted), for the bench's ratios. */
  bytes: { received: number; sent: number };
  /** LFS objects the host stores, by oid. */
  lfsObjects: Map<string, Buffer>;
  /** A new bare repository, optionally seeded from a work tree's branches and tags. */
  createRepository(repository: string, seedFrom?: string): Promise<string>;
  /** `refs -> id` of a bare repository, as the host has them. */
  refs(repository: string): Promise<Record<string, string>>;
  /** Accepts `token` too from now on (a GitHub App's installation tokens). */
  acceptToken(token: string): void;
  close(): Promise<void>;
}

/**
 * A Git host for the tests: `git http-backend` (Git's own smart-HTTP server, as CGI) behind a node:http server that
 * demands a credential, with a scripted LFS server beside it (batch, signed storage URLs, verify, locks) as hosts
 * such as GitHub run theirs.
 */
export async function startGitHost(options: { token?: string; anonymousReads?: boolean } = {}): Promise<ScriptedGitHost> {
  const root = mkdtempSync(path.join(os.tmpdir(), "axon-git-host-"));
  const sandbox: GitSandbox = gitSandbox();
  const token = options.token ?? `ghp_${randomBytes(18).toString("hex")}`;
  const tokens = new Set([token]);
  const requests: HostRequest[] = [];
  const storageToken = `storage-${randomBytes(16).toString("hex")}`;
  const signingKey = randomBytes(16).toString("hex");
  const storageSecrets = [storageToken];
  const lfsObjects = new Map<string, Buffer>();
  const bytes = { received: 0, sent: 0 };
  const sign = (oid: string) => createHash("sha256").update(`${signingKey}:${oid}`).digest("hex");
  let url = "";

  const authorized = (req: http.IncomingMessage): boolean => {
    const header = req.headers.authorization ?? "";
    const basic = /^Basic (.+)$/.exec(header)?.[1];
    const presented = basic !== undefined ? Buffer.from(basic, "base64").toString().split(":").slice(1).join(":") : /^Bearer (.+)$/.exec(header)?.[1];
    return presented !== undefined && tokens.has(presented);
  };

  const server = http.createServer((req, res) => {
    const [pathname = "/", query = ""] = (req.url ?? "/").split("?");
    const isAuthorized = authorized(req);
    requests.push({ method: req.method ?? "GET", path: pathname, authorized: isAuthorized, gitProtocol: req.headers["git-protocol"] as string | undefined });
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/vnd.git-lfs+json" });
      res.end(JSON.stringify(body));
    };

    // The storage behind the LFS API: authorized by its own signature and header, never by the host's token.
    const storage = /^\/storage\/([0-9a-f]{64})$/.exec(pathname);
    if (storage) {
      const oid = storage[1]!;
      if (new URLSearchParams(query).get("signature") !== sign(oid) || req.headers["x-storage-token"] !== storageToken) return json(403, { message: "bad signature" });
      if (req.method === "GET") {
        const object = lfsObjects.get(oid);
        if (!object) return json(404, { message: "no such object" });
        res.writeHead(200, { "content-type": "application/octet-stream", "content-length": String(object.length) });
        return void res.end(object);
      }
      const pieces: Buffer[] = [];
      req.on("data", (piece: Buffer) => pieces.push(piece));
      req.on("end", () => {
        const body = Buffer.concat(pieces);
        if (createHash("sha256").update(body).digest("hex") !== oid) return json(422, { message: "content does not match its oid" });
        lfsObjects.set(oid, body);
        res.writeHead(200).end();
      });
      return;
    }
    const verify = /^\/verify\/([0-9a-f]{64})$/.exec(pathname);
    if (verify) {
      if (req.headers["x-storage-token"] !== storageToken) return json(403, { message: "bad token" });
      req.resume();
      return json(lfsObjects.has(verify[1]!) ? 200 : 404, {});
    }

    const reading = req.method === "GET" || pathname.endsWith("/git-upload-pack") || pathname.endsWith("/locks/verify") || (pathname.endsWith("/info/refs") && query.includes("git-upload-pack"));
    if (!isAuthorized && !(options.anonymousReads && reading && !pathname.includes("/info/lfs/"))) {
      req.resume();
      res.writeHead(401, { "www-authenticate": 'Basic realm="scripted host"', "content-type": "text/plain" });
      return void res.end("credentials required\n");
    }

    const lfs = /^\/(.+\.git)\/info\/lfs\/(.*)$/.exec(pathname);
    if (lfs) return serveLfs(req, res, lfs[2]!, json);
    serveBackend(req, res, pathname, query);
  });

  function serveLfs(req: http.IncomingMessage, res: http.ServerResponse, rest: string, json: (status: number, body: unknown) => void): void {
    const pieces: Buffer[] = [];
    req.on("data", (piece: Buffer) => pieces.push(piece));
    req.on("end", () => {
      const body = pieces.length > 0 ? (JSON.parse(Buffer.concat(pieces).toString()) as Record<string, any>) : {};
      if (rest === "objects/batch") {
        const objects = (body.objects as { oid: string; size: number }[]).map(({ oid, size }) => {
          const href = `${url}/storage/${oid}?signature=${sign(oid)}`;
          storageSecrets.push(sign(oid));
          const header = { "X-Storage-Token": storageToken };
          if (body.operation === "download") {
            return lfsObjects.has(oid) ? { oid, size, actions: { download: { href, header, expires_in: 600 } } } : { oid, size, error: { code: 404, message: "Object does not exist" } };
          }
          if (lfsObjects.has(oid)) return { oid, size };
          return { oid, size, actions: { upload: { href, header, expires_in: 600 }, verify: { href: `${url}/verify/${oid}`, header, expires_in: 600 } } };
        });
        return json(200, { transfer: "basic", objects, hash_algo: "sha256" });
      }
      if (rest === "locks/verify") return json(200, { ours: [], theirs: [] });
      if (rest === "locks" && req.method === "GET") return json(200, { locks: [] });
      if (rest === "locks" && req.method === "POST") return json(201, { lock: { id: "1", path: body.path, locked_at: new Date().toISOString(), owner: { name: "agent" } } });
      json(404, { message: "not found" });
    });
  }

  function serveBackend(req: http.IncomingMessage, res: http.ServerResponse, pathname: string, query: string): void {
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      GIT_PROJECT_ROOT: root,
      GIT_HTTP_EXPORT_ALL: "1",
      GIT_CONFIG_NOSYSTEM: "1",
      HOME: sandbox.home,
      PATH_INFO: decodeURIComponent(pathname),
      QUERY_STRING: query,
      REQUEST_METHOD: req.method ?? "GET",
      CONTENT_TYPE: req.headers["content-type"] ?? "",
      // http-backend enables receive-pack for an authenticated user.
      REMOTE_USER: "agent",
      REMOTE_ADDR: "127.0.0.1",
      ...(req.headers["content-length"] ? { CONTENT_LENGTH: req.headers["content-length"] } : {}),
      ...(req.headers["content-encoding"] ? { HTTP_CONTENT_ENCODING: String(req.headers["content-encoding"]) } : {}),
      ...(req.headers["git-protocol"] ? { GIT_PROTOCOL: String(req.headers["git-protocol"]) } : {}),
    };
    const backend = spawn("git", ["http-backend"], { env, stdio: ["pipe", "pipe", "pipe"] });
    req.on("data", (piece: Buffer) => (bytes.received += piece.length));
    backend.stdout.on("data", (piece: Buffer) => (bytes.sent += piece.length));
    req.pipe(backend.stdin);
    backend.stdin.on("error", () => undefined);
    backend.stderr.resume();
    let head = Buffer.alloc(0);
    let headersDone = false;
    backend.stdout.on("data", (piece: Buffer) => {
      if (headersDone) {
        if (!res.write(piece)) {
          backend.stdout.pause();
          res.once("drain", () => backend.stdout.resume());
        }
        return;
      }
      head = Buffer.concat([head, piece]);
      const end = head.indexOf("\r\n\r\n");
      if (end < 0) return;
      headersDone = true;
      let status = 200;
      const headers: Record<string, string> = {};
      for (const line of head.subarray(0, end).toString("latin1").split("\r\n")) {
        const colon = line.indexOf(":");
        const name = line.slice(0, colon).trim().toLowerCase();
        const value = line.slice(colon + 1).trim();
        if (name === "status") status = Number(value.split(" ")[0]);
        else headers[name] = value;
      }
      res.writeHead(status, headers);
      bytes.sent -= end + 4; // the CGI headers are no body
      res.write(head.subarray(end + 4));
    });
    backend.stdout.on("end", () => res.end());
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;

  return {
    url,
    root,
    requests,
    token,
    storageSecrets,
    bytes,
    lfsObjects,
    async createRepository(repository, seedFrom) {
      const bare = path.join(root, repository);
      mkdirSync(path.dirname(bare), { recursive: true });
      await sandbox.git(["init", "-q", "--bare", bare]);
      if (seedFrom !== undefined) await sandbox.git(["push", "-q", bare, "refs/heads/*:refs/heads/*", "refs/tags/*:refs/tags/*"], { cwd: seedFrom });
      return bare;
    },
    async refs(repository) {
      const listing = await sandbox.git(["for-each-ref", "--format=%(refname) %(objectname)"], { cwd: path.join(root, repository) });
      return Object.fromEntries(listing.split("\n").filter(Boolean).map((line) => line.split(" ") as [string, string]));
    },
    acceptToken(another) {
      tokens.add(another);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
