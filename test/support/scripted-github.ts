import { generateKeyPairSync, randomBytes, type KeyObject } from "node:crypto";
import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { jwtVerify } from "jose";

/** One installation token the scripted API minted: for which repositories and with which permissions. */
export interface MintedToken {
  installation: number;
  token: string;
  repositories: string[];
  permissions: Record<string, string>;
}

export interface ScriptedGitHub {
  /** `http://127.0.0.1:<port>`: the App's `api_url`. */
  url: string;
  appId: number;
  /** The App's private key, PKCS#1 PEM as GitHub hands it out. */
  privateKeyPem: string;
  minted: MintedToken[];
  /** JWTs that failed verification (signature, issuer, lifetime): each answered 401. */
  rejectedJwts: number;
  /** Repositories (`owner/name`) the App is installed on, by installation id. */
  installations: Map<number, string[]>;
  /** Called with each token minted, so a Git host can accept it. */
  onMint?: (token: string) => void;
  close(): Promise<void>;
}

/**
 * GitHub's App API as far as Axon uses it: `GET /repos/{owner}/{repo}/installation` and
 * `POST /app/installations/{id}/access_tokens`, both authenticated by the App's RS256 JWT, which is verified here
 * against the App's public key (issuer, at most ten minutes of lifetime, issued in the past).
 */
export async function startScriptedGitHub(
  options: { appId?: number; installations?: Record<number, string[]>; tokenLifetimeMs?: number; now?: () => number } = {},
): Promise<ScriptedGitHub> {
  const now = options.now ?? Date.now;
  const tokenLifetimeMs = options.tokenLifetimeMs ?? 3600_000;
  const appId = options.appId ?? 4242;
  const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const installations = new Map(Object.entries(options.installations ?? { 77: ["acme/widgets"] }).map(([id, repositories]) => [Number(id), repositories]));
  const state: ScriptedGitHub = {
    url: "",
    appId,
    privateKeyPem: privateKey.export({ type: "pkcs1", format: "pem" }).toString(),
    minted: [],
    rejectedJwts: 0,
    installations,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, "close");
    },
  };

  const verified = async (req: http.IncomingMessage, key: KeyObject): Promise<boolean> => {
    const jwt = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1];
    if (jwt === undefined) return false;
    try {
      const { payload, protectedHeader } = await jwtVerify(jwt, key, { algorithms: ["RS256"], issuer: String(appId), currentDate: new Date(now()) });
      return protectedHeader.alg === "RS256" && payload.exp! - payload.iat! <= 600 && payload.iat! <= now() / 1000;
    } catch {
      return false;
    }
  };

  const server = http.createServer(async (req, res) => {
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    const pieces: Buffer[] = [];
    for await (const piece of req) pieces.push(piece as Buffer);
    if (!(await verified(req, publicKey))) {
      state.rejectedJwts++;
      return json(401, { message: "A JSON web token could not be decoded" });
    }
    const installation = /^\/repos\/([^/]+)\/([^/]+)\/installation$/.exec(req.url ?? "");
    if (installation && req.method === "GET") {
      const repository = `${installation[1]}/${installation[2]}`;
      const found = [...installations].find(([, repositories]) => repositories.includes(repository));
      return found ? json(200, { id: found[0], app_id: appId }) : json(404, { message: "Not Found" });
    }
    const tokens = /^\/app\/installations\/(\d+)\/access_tokens$/.exec(req.url ?? "");
    if (tokens && req.method === "POST") {
      const id = Number(tokens[1]);
      const body = JSON.parse(Buffer.concat(pieces).toString() || "{}") as { repositories?: string[]; permissions?: Record<string, string> };
      const covered = installations.get(id);
      if (!covered) return json(404, { message: "Not Found" });
      if (!(body.repositories ?? []).every((name) => covered.some((repository) => repository.endsWith(`/${name}`)))) return json(422, { message: "There is at least one repository that does not exist or is not accessible" });
      const token = `ghs_${randomBytes(18).toString("hex")}`;
      state.minted.push({ installation: id, token, repositories: body.repositories ?? [], permissions: body.permissions ?? {} });
      state.onMint?.(token);
      return json(201, { token, expires_at: new Date(now() + tokenLifetimeMs).toISOString(), permissions: body.permissions, repository_selection: "selected" });
    }
    json(404, { message: "Not Found" });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return state;
}
