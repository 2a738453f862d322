import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { exportJWK, generateKeyPair, SignJWT, UnsecuredJWT, type JWK, type JWTPayload, type CryptoKey } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JwtVerifier, type JwtSettings } from "../../src/auth/jwt.js";
import { fixtureEnv } from "../e2e/expectations.js";
import { roomyAdmission, writeFiles } from "../support/operations.js";
import { ScriptedChats } from "../support/scripted-chat.js";
import { startTestServer, type TestServer } from "../support/server.js";

type Json = Record<string, any>;

const issuer = "https://idp.example.test";
const audience = "axon";
const start = Date.parse("2026-06-01T12:00:00Z");

interface TestKey {
  kid: string;
  alg: string;
  privateKey: CryptoKey;
  jwk: JWK;
}

async function testKey(kid: string, alg: string): Promise<TestKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, alg === "EdDSA" ? { crv: "Ed25519" } : {});
  return { kid, alg, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg, use: "sig" } };
}

/** An identity provider's JWKS endpoint on a local port: serves whatever key set the test puts up, and counts fetches. */
async function startJwks(keys: TestKey[]) {
  const state = { keys, fetches: 0 };
  const server = http.createServer((_req, res) => {
    state.fetches++;
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ keys: state.keys.map((key) => key.jwk) }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { state, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks.json`, close: () => new Promise((resolve) => server.close(resolve)) };
}

/** A clock the test moves by hand. */
function manualClock() {
  let now = start;
  return { now: () => new Date(now), advance: (ms: number) => void (now += ms) };
}

function sign(key: TestKey, claims: JWTPayload = {}, options: { iat?: number; exp?: number; nbf?: number; header?: Json } = {}): Promise<string> {
  const seconds = Math.floor(start / 1000);
  const jwt = new SignJWT({ sub: "finance-app", ...claims })
    .setProtectedHeader({ alg: key.alg, kid: key.kid, ...options.header })
    .setIssuer(issuer)
    .setAudience(audience)
    .setIssuedAt(options.iat ?? seconds)
    .setExpirationTime(options.exp ?? seconds + 300);
  if (options.nbf !== undefined) jwt.setNotBefore(options.nbf);
  return jwt.sign(key.privateKey);
}

describe("bearer JWTs from an identity provider", () => {
  let rsa: TestKey, ec: TestKey, ed: TestKey, rotated: TestKey;
  let jwks: Awaited<ReturnType<typeof startJwks>>;

  beforeAll(async () => {
    [rsa, ec, ed, rotated] = await Promise.all([testKey("rsa-1", "RS256"), testKey("ec-1", "ES256"), testKey("ed-1", "EdDSA"), testKey("rsa-2", "PS256")]);
    jwks = await startJwks([rsa, ec, ed]);
  });
  afterAll(async () => {
    await jwks?.close();
  });

  const settings = (overrides: Partial<JwtSettings> = {}): JwtSettings => ({
    issuer,
    audience,
    jwksUrl: jwks.url,
    jwksFile: undefined,
    clientClaim: "sub",
    operatorClaim: { claim: "roles", value: "axon-operator" },
    ...overrides,
  });
  const verifier = (clock = manualClock(), overrides: Partial<JwtSettings> = {}) => JwtVerifier.create(settings(overrides), { clock });

  it("accepts RSA, EC and EdDSA signatures from the issuer's key set, named by `sub`", async () => {
    const tokens = await verifier();
    for (const key of [rsa, ec, ed]) expect(await tokens.verify(await sign(key))).toEqual({ name: "finance-app", operator: false });
  });

  it("names the client by the configured claim and grants operator rights by the configured claim value", async () => {
    const tokens = await verifier(manualClock(), { clientClaim: "azp" });
    expect(await tokens.verify(await sign(rsa, { azp: "payroll", roles: ["reader", "axon-operator"] }))).toEqual({ name: "payroll", operator: true });
    expect(await tokens.verify(await sign(rsa, { azp: "payroll", roles: ["reader"] }))).toEqual({ name: "payroll", operator: false });
    expect(await tokens.verify(await sign(rsa, { roles: ["axon-operator"] }))).toBeUndefined();
  });

  it("takes `exp` and `nbf` with up to 60 seconds of skew, no more", async () => {
    const clock = manualClock();
    const tokens = await verifier(clock);
    const seconds = Math.floor(start / 1000);
    const expiring = await sign(rsa, {}, { exp: seconds + 10 });
    const early = await sign(rsa, {}, { nbf: seconds + 50 });
    const tooEarly = await sign(rsa, {}, { nbf: seconds + 70 });
    expect(await tokens.verify(early)).toBeDefined();
    expect(await tokens.verify(tooEarly)).toBeUndefined();
    clock.advance(65_000);
    expect(await tokens.verify(expiring)).toBeDefined();
    clock.advance(10_000);
    expect(await tokens.verify(expiring)).toBeUndefined();
  });

  it("refuses another issuer, another audience, no expiry, alg none, HMAC and a key of the wrong type", async () => {
    const tokens = await verifier();
    const seconds = Math.floor(start / 1000);
    const refused = [
      await new SignJWT({ sub: "finance-app" }).setProtectedHeader({ alg: "RS256", kid: "rsa-1" }).setIssuer("https://elsewhere.test").setAudience(audience).setExpirationTime(seconds + 60).sign(rsa.privateKey),
      await new SignJWT({ sub: "finance-app" }).setProtectedHeader({ alg: "RS256", kid: "rsa-1" }).setIssuer(issuer).setAudience("other-service").setExpirationTime(seconds + 60).sign(rsa.privateKey),
      await new SignJWT({ sub: "finance-app" }).setProtectedHeader({ alg: "RS256", kid: "rsa-1" }).setIssuer(issuer).setAudience(audience).sign(rsa.privateKey),
      new UnsecuredJWT({ sub: "finance-app" }).setIssuer(issuer).setAudience(audience).setExpirationTime(seconds + 60).encode() + "c2ln",
      await new SignJWT({ sub: "finance-app" }).setProtectedHeader({ alg: "HS256", kid: "rsa-1" }).setIssuer(issuer).setAudience(audience).setExpirationTime(seconds + 60).sign(randomBytes(32)),
      // An RSA algorithm naming the EC key's kid: the key set holds no RSA key by that id.
      await new SignJWT({ sub: "finance-app" }).setProtectedHeader({ alg: "RS256", kid: "ec-1" }).setIssuer(issuer).setAudience(audience).setExpirationTime(seconds + 60).sign((await generateKeyPair("RS256")).privateKey),
      // Signed by a key the issuer never published, under a published kid.
      await sign({ ...rsa, privateKey: (await generateKeyPair("RS256")).privateKey }),
    ];
    for (const token of refused) expect(await tokens.verify(token), token).toBeUndefined();
  });

  it("follows a key rotation: an unknown kid refetches the key set, at most once a minute", async () => {
    const clock = manualClock();
    const tokens = await verifier(clock);
    expect(await tokens.verify(await sign(rsa))).toBeDefined();
    const fetchesAfterFirst = jwks.state.fetches;

    // The issuer starts signing with a key it has not published yet: tokens naming it cost no fetch within the minute.
    const early = await sign(rotated);
    for (let attempt = 0; attempt < 5; attempt++) expect(await tokens.verify(early)).toBeUndefined();
    expect(jwks.state.fetches).toBe(fetchesAfterFirst);

    jwks.state.keys = [rsa, ec, ed, rotated];
    clock.advance(61_000);
    expect(await tokens.verify(await sign(rotated, {}, { iat: Math.floor(start / 1000) + 61, exp: Math.floor(start / 1000) + 400 }))).toEqual({ name: "finance-app", operator: false });
    expect(jwks.state.fetches).toBe(fetchesAfterFirst + 1);
    jwks.state.keys = [rsa, ec, ed];
  });

  it("reads a key set from AXON_JWT_JWKS_FILE", async () => {
    const file = path.join(path.dirname(writeFiles("http://127.0.0.1:9", roomyAdmission).AXON_CLIENTS_FILE), "jwks.json");
    writeFileSync(file, JSON.stringify({ keys: [ec.jwk] }));
    const tokens = await verifier(manualClock(), { jwksUrl: undefined, jwksFile: file });
    expect(await tokens.verify(await sign(ec))).toBeDefined();
    expect(await tokens.verify(await sign(rsa))).toBeUndefined();
  });

  describe("on a server", () => {
    let server: TestServer;
    const logLines: string[] = [];
    let live: TestKey;

    beforeAll(async () => {
      live = await testKey("live-1", "ES256");
      jwks.state.keys = [rsa, ec, ed, live];
      const files = writeFiles("http://127.0.0.1:9", roomyAdmission, { rules: [{ id: "chat", effect: "allow", operations: ["agent.chat"] }] });
      const accessFile = path.join(path.dirname(files.AXON_CLIENTS_FILE), "access.json");
      writeFileSync(accessFile, JSON.stringify({ "finance-app": ["relay"], anonymous: ["greeter"] }));
      server = await startTestServer({
        env: {
          ...fixtureEnv,
          ...files,
          AXON_NETWORK_ACCESS_FILE: accessFile,
          AXON_JWT_ISSUER: issuer,
          AXON_JWT_AUDIENCE: audience,
          AXON_JWT_JWKS_URL: jwks.url,
          AXON_JWT_OPERATOR_CLAIM: "roles:axon-operator",
        },
        chats: new ScriptedChats(),
        logLines,
      });
    });
    afterAll(async () => {
      await server?.close();
    });

    /** A token valid now, on the real clock the server runs on. */
    const liveToken = (claims: JWTPayload = {}) => {
      const now = Math.floor(Date.now() / 1000);
      return sign(live, claims, { iat: now, exp: now + 300 });
    };
    const get = (route: string, token: string) => fetch(server.url + route, { headers: { authorization: `Bearer ${token}` } });

    it("a token names a client on the agent surface and on the neuro-san surface", async () => {
      const token = await liveToken();
      expect((await get("/api/agent/v1/operations", token)).status).toBe(200);
      const list = (await (await get("/api/v1/list", token)).json()) as Json;
      expect(list.agents.map((agent: Json) => agent.agent_name)).toEqual(["relay"]);
    });

    it("only a token with the operator claim reaches the operator surface", async () => {
      expect((await get("/api/operator/v1/requests", await liveToken())).status).toBe(401);
      expect((await get("/api/operator/v1/requests", await liveToken({ roles: ["axon-operator"] }))).status).toBe(200);
    });

    it("the plain HTTP routes take tokens too: the operator feed and the transfer routes", async () => {
      const feed = new AbortController();
      const events = await fetch(`${server.url}/api/operator/v1/events`, { headers: { authorization: `Bearer ${await liveToken({ roles: ["axon-operator"] })}` }, signal: feed.signal });
      expect(events.status).toBe(200);
      expect(events.headers.get("content-type")).toBe("text/event-stream");
      feed.abort();
      expect((await get("/api/agent/v1/streams/str_unknown", await liveToken())).status).toBe(404);
      expect((await get("/api/agent/v1/streams/str_unknown", "x.y.z")).status).toBe(401);
    });

    it("a refused token is a plain 401 and is never written to the logs", async () => {
      const expired = await sign(live, {}, { iat: 1_000_000, exp: 1_000_060 });
      const response = await get("/api/agent/v1/operations", expired);
      expect(response.status).toBe(401);
      const body = await response.text();
      expect(body).not.toContain(expired.split(".")[1]);
      expect(body).not.toMatch(/expired|exp/i);
      const signature = expired.split(".")[2]!;
      expect(logLines.some((line) => line.includes(signature) || line.includes(expired.split(".")[1]!))).toBe(false);
    });
  });
});
