import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";

const root = "/srv/axon";
const jwt = { AXON_JWT_ISSUER: "https://idp.test", AXON_JWT_AUDIENCE: "axon", AXON_JWT_JWKS_URL: "https://idp.test/jwks.json" };

describe("security settings from the environment", () => {
  it("leaves TLS, tokens and network access off unless asked for", () => {
    const config = loadConfig({}, root);
    expect(config.tls).toBeUndefined();
    expect(config.jwt).toBeUndefined();
    expect(config.networkAccessFile).toBeUndefined();
    expect(config.trustUserIdMetadata).toBe(false);
  });

  it("takes TLS files relative to the project root, and refuses a certificate without its key", () => {
    expect(loadConfig({ AXON_TLS_CERT_FILE: "tls/cert.pem", AXON_TLS_KEY_FILE: "tls/key.pem" }, root).tls).toEqual({
      certFile: "/srv/axon/tls/cert.pem",
      keyFile: "/srv/axon/tls/key.pem",
      clientCaFile: undefined,
    });
    expect(() => loadConfig({ AXON_TLS_CERT_FILE: "cert.pem" }, root)).toThrow(/AXON_TLS_KEY_FILE/);
    expect(() => loadConfig({ AXON_TLS_CLIENT_CA_FILE: "ca.pem" }, root)).toThrow(/AXON_TLS_CERT_FILE/);
  });

  it("reads the JWT settings, with `sub` naming the client and a claim:value granting operator rights", () => {
    expect(loadConfig({ ...jwt, AXON_JWT_OPERATOR_CLAIM: "roles:axon-operator" }, root).jwt).toEqual({
      issuer: "https://idp.test",
      audience: "axon",
      jwksUrl: "https://idp.test/jwks.json",
      jwksFile: undefined,
      clientClaim: "sub",
      operatorClaim: { claim: "roles", value: "axon-operator" },
    });
  });

  it("refuses an issuer without an audience or a key set, and an operator claim without its value", () => {
    expect(() => loadConfig({ ...jwt, AXON_JWT_AUDIENCE: "" }, root)).toThrow(/AXON_JWT_AUDIENCE/);
    expect(() => loadConfig({ ...jwt, AXON_JWT_JWKS_URL: "" }, root)).toThrow(/AXON_JWT_JWKS_URL or AXON_JWT_JWKS_FILE/);
    expect(() => loadConfig({ ...jwt, AXON_JWT_OPERATOR_CLAIM: "roles" }, root)).toThrow(/claim:value/);
  });

  it("trusts user_id metadata only when told true", () => {
    expect(loadConfig({ AXON_TRUST_USER_ID_METADATA: "true" }, root).trustUserIdMetadata).toBe(true);
    expect(loadConfig({ AXON_TRUST_USER_ID_METADATA: "false" }, root).trustUserIdMetadata).toBe(false);
    expect(() => loadConfig({ AXON_TRUST_USER_ID_METADATA: "maybe" }, root)).toThrow(/true or false/);
  });
});
