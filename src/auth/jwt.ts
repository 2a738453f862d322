import { readFile } from "node:fs/promises";
import { createLocalJWKSet, errors, jwtVerify, type JSONWebKeySet, type JWTPayload, type JWTVerifyGetKey } from "jose";
import type { Logger } from "../logger.js";
import { systemClock, type Clock } from "../operations/clock.js";
import { PRINCIPAL_NAME } from "./principals.js";

/** Asymmetric signatures only: `none` and HMAC (a shared secret an issuer's every audience would hold) are refused. */
export const acceptedAlgorithms = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA", "Ed25519"];

/** The most a token's `exp` and `nbf` may be off by (clocks of issuer and server drift). */
const clockToleranceSeconds = 60;
/** A token naming an unknown `kid` refetches the key set at most this often: a flood of forged kids costs one fetch. */
const refetchCooldownMs = 60_000;
const fetchTimeoutMs = 5_000;

export interface JwtSettings {
  issuer: string;
  /** Required: without it a token the issuer made for any other service would do here. */
  audience: string;
  jwksUrl: string | undefined;
  jwksFile: string | undefined;
  /** The claim that names the client: `sub` by default. */
  clientClaim: string;
  /** `roles:axon-operator`: a token whose `roles` claim holds `axon-operator` also authenticates an operator. */
  operatorClaim: { claim: string; value: string } | undefined;
}

/** Who a verified token names. */
export interface TokenIdentity {
  name: string;
  operator: boolean;
}

/**
 * Bearer JWTs from an identity provider, checked by jose: signature against the issuer's key set, `iss`, `aud`, `exp`
 * and `nbf`. A token that fails any check is simply no identity; why is logged at debug level, never the token.
 */
export class JwtVerifier {
  private constructor(
    private readonly settings: JwtSettings,
    private readonly keys: JWTVerifyGetKey,
    private readonly clock: Clock,
    private readonly logger: Logger | undefined,
  ) {}

  static async create(settings: JwtSettings, options: { clock?: Clock; logger?: Logger } = {}): Promise<JwtVerifier> {
    const clock = options.clock ?? systemClock;
    let keys: JWTVerifyGetKey;
    if (settings.jwksFile !== undefined) {
      keys = createLocalJWKSet(JSON.parse(await readFile(settings.jwksFile, "utf8")) as JSONWebKeySet);
    } else if (settings.jwksUrl !== undefined) {
      const remote = remoteKeySet(new URL(settings.jwksUrl), clock, options.logger);
      // Fetched before the first token arrives, so that no caller waits for it; a failure is retried on first use.
      await remote.refresh();
      keys = remote.keys;
    } else {
      throw new Error("AXON_JWT_ISSUER needs AXON_JWT_JWKS_URL or AXON_JWT_JWKS_FILE");
    }
    return new JwtVerifier(settings, keys, clock, options.logger);
  }

  /** Cheap shape test, so that a client secret is never sent to the JWT parser. */
  static looksLikeJwt(token: string): boolean {
    return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(token);
  }

  async verify(token: string): Promise<TokenIdentity | undefined> {
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, this.keys, {
        issuer: this.settings.issuer,
        audience: this.settings.audience,
        algorithms: acceptedAlgorithms,
        clockTolerance: clockToleranceSeconds,
        currentDate: this.clock.now(),
        requiredClaims: ["exp"],
      }));
    } catch (error) {
      this.logger?.debug({ reason: error instanceof errors.JOSEError ? error.code : "invalid" }, "bearer token refused");
      return undefined;
    }
    const name = payload[this.settings.clientClaim];
    if (typeof name !== "string" || !PRINCIPAL_NAME.test(name)) {
      this.logger?.debug({ claim: this.settings.clientClaim }, "bearer token refused: its client claim is no client name");
      return undefined;
    }
    return { name, operator: this.isOperator(payload) };
  }

  private isOperator(payload: JWTPayload): boolean {
    const wanted = this.settings.operatorClaim;
    if (wanted === undefined) return false;
    const value = payload[wanted.claim];
    if (Array.isArray(value)) return value.includes(wanted.value);
    // OAuth's `scope` is one space-separated string.
    return typeof value === "string" && value.split(" ").includes(wanted.value);
  }
}

/**
 * The issuer's key set from its JWKS URL: fetched on first use, kept, and fetched again when a token names a `kid` it
 * does not hold (a rotation), at most once per cooldown on the injected clock.
 */
function remoteKeySet(url: URL, clock: Clock, logger: Logger | undefined): { keys: JWTVerifyGetKey; refresh(): Promise<void> } {
  let current: JWTVerifyGetKey | undefined;
  let fetchedAt = Number.NEGATIVE_INFINITY;
  let inFlight: Promise<void> | undefined;

  const refresh = (): Promise<void> =>
    (inFlight ??= (async () => {
      fetchedAt = clock.now().getTime();
      try {
        const response = await fetch(url, { signal: AbortSignal.timeout(fetchTimeoutMs), redirect: "error" });
        if (!response.ok) throw new Error(`HTTP ${response.status}`);
        current = createLocalJWKSet((await response.json()) as JSONWebKeySet);
      } catch (error) {
        logger?.warn({ url: url.href, err: error instanceof Error ? error.message : String(error) }, "JWKS fetch failed");
      } finally {
        inFlight = undefined;
      }
    })());

  const keys: JWTVerifyGetKey = async (header, token) => {
    if (current === undefined || inFlight !== undefined) await refresh();
    try {
      if (current === undefined) throw new errors.JWKSNoMatchingKey();
      return await current(header, token);
    } catch (error) {
      if (!(error instanceof errors.JWKSNoMatchingKey) || clock.now().getTime() - fetchedAt < refetchCooldownMs) throw error;
      await refresh();
      if (current === undefined) throw error;
      return current(header, token);
    }
  };
  return { keys, refresh };
}

export function jwtSettingsFromEnv(env: NodeJS.ProcessEnv, resolvePath: (file: string) => string): JwtSettings | undefined {
  const issuer = env.AXON_JWT_ISSUER;
  if (!issuer) return undefined;
  const operator = env.AXON_JWT_OPERATOR_CLAIM;
  let operatorClaim: JwtSettings["operatorClaim"];
  if (operator) {
    const colon = operator.indexOf(":");
    if (colon <= 0 || colon === operator.length - 1) throw new Error(`AXON_JWT_OPERATOR_CLAIM must be claim:value, got ${JSON.stringify(operator)}`);
    operatorClaim = { claim: operator.slice(0, colon), value: operator.slice(colon + 1) };
  }
  const jwksUrl = env.AXON_JWT_JWKS_URL || undefined;
  const jwksFile = env.AXON_JWT_JWKS_FILE ? resolvePath(env.AXON_JWT_JWKS_FILE) : undefined;
  if (jwksUrl === undefined && jwksFile === undefined) throw new Error("AXON_JWT_ISSUER needs AXON_JWT_JWKS_URL or AXON_JWT_JWKS_FILE");
  const audience = env.AXON_JWT_AUDIENCE;
  if (!audience) throw new Error("AXON_JWT_ISSUER needs AXON_JWT_AUDIENCE: the audience tokens for Axon carry");
  return {
    issuer,
    audience,
    jwksUrl,
    jwksFile,
    clientClaim: env.AXON_JWT_CLIENT_CLAIM || "sub",
    operatorClaim,
  };
}
