import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CredentialsFileError, loadCredentials } from "../../../src/operations/providers/credentials.js";

describe("loadCredentials", () => {
  let folder: string;
  beforeAll(async () => {
    folder = await mkdtemp(path.join(tmpdir(), "axon-credentials-"));
  });
  afterAll(async () => {
    await rm(folder, { recursive: true, force: true });
  });

  async function file(name: string, text: string): Promise<string> {
    const target = path.join(folder, name);
    await writeFile(target, text);
    return target;
  }

  async function failureOf(text: string): Promise<CredentialsFileError> {
    const error = await loadCredentials(await file(`broken-${Math.random()}.hocon`, text), {}).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(CredentialsFileError);
    return error as CredentialsFileError;
  }

  it("reads a HOCON file into credentials with a normalized base URL and upper-case methods", async () => {
    const credentials = await loadCredentials(
      await file(
        "credentials.hocon",
        `
        # comments are fine
        example { base_url: "https://api.example.com/v1/", header: Authorization, scheme: Bearer, secret_env: EXAMPLE_TOKEN, methods: [GET, post] }
        local { base_url: "http://127.0.0.1:8081", header: "X-Api-Key", secret_env: LOCAL_KEY, methods: ["DELETE"] }
        `,
      ),
      {},
    );
    expect(credentials.names()).toEqual(["example", "local"]);
    expect(credentials.get("example")).toEqual({
      name: "example",
      origin: "https://api.example.com",
      basePath: "/v1",
      header: "Authorization",
      scheme: "Bearer",
      secretEnv: "EXAMPLE_TOKEN",
      methods: ["GET", "POST"],
    });
    expect(credentials.get("local")).toMatchObject({ origin: "http://127.0.0.1:8081", basePath: "", scheme: undefined });
  });

  it("names the header an upstream takes an idempotency key in, and refuses one that is no header name or carries the secret", async () => {
    const json = JSON.stringify({
      ledger: { base_url: "https://api.example.com", header: "Authorization", secret_env: "T", methods: ["POST"], idempotency_header: "Idempotency-Key" },
    });
    expect((await loadCredentials(await file("keyed.json", json), {})).get("ledger")?.idempotencyHeader).toBe("Idempotency-Key");
    const base = 'base_url: "https://a.example", header: Authorization, secret_env: T, methods: [POST]';
    expect((await failureOf(`x { ${base}, idempotency_header: "bad header" }`)).key).toBe("x.idempotency_header");
    expect((await failureOf(`x { ${base}, idempotency_header: authorization }`)).reason).toContain("must differ from the header carrying the secret");
    expect((await failureOf(`x { ${base}, idempotency_header: Content-Length }`)).key).toBe("x.idempotency_header");
  });

  it("reads JSON files too", async () => {
    const json = JSON.stringify({ gh: { base_url: "https://api.github.com", header: "Authorization", scheme: "token", secret_env: "GH", methods: ["GET"] } });
    const credentials = await loadCredentials(await file("credentials.json", json), {});
    expect(credentials.get("gh")?.origin).toBe("https://api.github.com");
  });

  it("no file configured means no credentials", async () => {
    const credentials = await loadCredentials(undefined, {});
    expect(credentials.names()).toEqual([]);
  });

  it("takes the file from AXON_CREDENTIALS_FILE when none is passed", async () => {
    const configured = await file("from-env.hocon", `svc { base_url: "http://localhost", header: X-Key, secret_env: K, methods: [GET] }`);
    const credentials = await loadCredentials(undefined, { AXON_CREDENTIALS_FILE: configured });
    expect(credentials.names()).toEqual(["svc"]);
  });

  it("reads the secret from the environment when asked, and an empty variable counts as missing", async () => {
    const configured = await file("secrets.hocon", `a { base_url: "http://localhost", header: X-Key, secret_env: A_KEY, methods: [GET] }`);
    const env: NodeJS.ProcessEnv = {};
    const credentials = await loadCredentials(configured, env);
    const credential = credentials.get("a");
    if (credential === undefined) throw new Error("credential missing");
    expect(credentials.secretOf(credential)).toBeUndefined();
    env.A_KEY = "";
    expect(credentials.secretOf(credential)).toBeUndefined();
    env.A_KEY = "s3cret-value";
    expect(credentials.secretOf(credential)).toBe("s3cret-value");
  });

  it("a configured file that does not exist is an error naming it", async () => {
    const missing = path.join(folder, "nope.hocon");
    const error = await loadCredentials(missing, {}).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(CredentialsFileError);
    expect(String((error as Error).message)).toContain(missing);
  });

  it("a syntax error names the file", async () => {
    const error = await failureOf(`a { base_url: `);
    expect(error.message).toContain(folder);
  });

  it.each([
    ["a base URL that is not http or https", `x { base_url: "ftp://h", header: A, secret_env: E, methods: [GET] }`, "x.base_url"],
    ["a base URL that is not a URL", `x { base_url: "not a url", header: A, secret_env: E, methods: [GET] }`, "x.base_url"],
    ["a base URL with a user", `x { base_url: "https://u:p@h", header: A, secret_env: E, methods: [GET] }`, "x.base_url"],
    ["a base URL with a query", `x { base_url: "https://h/?a=1", header: A, secret_env: E, methods: [GET] }`, "x.base_url"],
    ["a missing base URL", `x { header: A, secret_env: E, methods: [GET] }`, "x.base_url"],
    ["an invalid header name", `x { base_url: "https://h", header: "Bad Header", secret_env: E, methods: [GET] }`, "x.header"],
    ["a header the transport owns", `x { base_url: "https://h", header: Host, secret_env: E, methods: [GET] }`, "x.header"],
    ["an invalid scheme", `x { base_url: "https://h", header: A, scheme: "Bea rer", secret_env: E, methods: [GET] }`, "x.scheme"],
    ["a missing secret_env", `x { base_url: "https://h", header: A, methods: [GET] }`, "x.secret_env"],
    ["an invalid secret_env", `x { base_url: "https://h", header: A, secret_env: "1-BAD", methods: [GET] }`, "x.secret_env"],
    ["an empty method list", `x { base_url: "https://h", header: A, secret_env: E, methods: [] }`, "x.methods"],
    ["an unknown method", `x { base_url: "https://h", header: A, secret_env: E, methods: [GET, TRACE] }`, "x.methods[1]"],
    ["an unknown field", `x { base_url: "https://h", header: A, secret_env: E, methods: [GET], secret: "inline" }`, "x.secret"],
    ["an entry that is not an object", `x: "https://h"`, "x"],
    ["an invalid credential name", `"bad name" { base_url: "https://h", header: A, secret_env: E, methods: [GET] }`, "bad name"],
  ])("refuses %s, naming the key", async (_what, text, key) => {
    const error = await failureOf(text);
    expect(error.key).toBe(key);
    expect(error.message).toContain(folder);
    expect(error.message).toContain(key);
  });
});
