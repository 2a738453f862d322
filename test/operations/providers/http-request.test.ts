import { once } from "node:events";
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { JsonObject } from "@bufbuild/protobuf";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { AxonError } from "../../../src/errors.js";
import { Credentials, type Credential } from "../../../src/operations/providers/credentials.js";
import { HttpRequestProvider, upstreamIdempotencyKey } from "../../../src/operations/providers/http-request.js";
import type { ExecutionContext, ExecutionOutcome, OperationToExecute } from "../../../src/operations/providers/provider.js";

const SECRET = "sEcReT-0123456789-abcdefghijKLMNOP";
const KEY_SECRET = "key-secret-ZYXWVUTSRQ-9876543210";

interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

type Handler = (request: IncomingMessage, response: ServerResponse, body: string) => void;

/** A real HTTP server on 127.0.0.1 that records what it received and answers with the current handler. */
class Upstream {
  readonly received: Received[] = [];
  handler: Handler = (_request, response) => response.end("ok");

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<Upstream> {
    const server = createServer();
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const upstream = new Upstream(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    server.on("request", (request: IncomingMessage, response: ServerResponse) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        const body = Buffer.concat(chunks).toString("utf8");
        upstream.received.push({ method: request.method ?? "", url: request.url ?? "", headers: request.headers, body });
        upstream.handler(request, response, body);
      });
    });
    return upstream;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    this.server.close();
    await once(this.server, "close");
  }
}

function credential(name: string, origin: string, overrides: Partial<Credential> = {}): Credential {
  return {
    name,
    origin,
    basePath: "/api",
    header: "Authorization",
    scheme: "Bearer",
    secretEnv: "EXAMPLE_TOKEN",
    methods: ["GET", "HEAD", "POST", "PUT"],
    ...overrides,
  };
}

function operation(target: JsonObject, args: JsonObject): OperationToExecute {
  return { id: "op_test", clientId: "client", operation: "http.request", target, arguments: args };
}

function context(signal = new AbortController().signal): ExecutionContext & { progress: string[] } {
  const progress: string[] = [];
  return { signal, progress, reportProgress: (summary) => progress.push(summary) };
}

function resultOf(outcome: ExecutionOutcome): JsonObject {
  if (outcome.state !== "succeeded") throw new Error(`expected success, got ${JSON.stringify(outcome)}`);
  return outcome.result;
}

describe("http.request", () => {
  let upstream: Upstream;
  let elsewhere: Upstream;
  let provider: HttpRequestProvider;
  const env: NodeJS.ProcessEnv = { EXAMPLE_TOKEN: SECRET, KEY_TOKEN: KEY_SECRET };
  let credentials: Credentials;

  beforeAll(async () => {
    [upstream, elsewhere] = await Promise.all([Upstream.start(), Upstream.start()]);
    credentials = new Credentials(
      [
        credential("example", upstream.url),
        credential("keyed", upstream.url, { header: "X-Api-Key", scheme: undefined, secretEnv: "KEY_TOKEN", basePath: "", methods: ["GET"] }),
        credential("unset", upstream.url, { secretEnv: "NOT_SET_ANYWHERE" }),
        credential("ledger", upstream.url, { idempotencyHeader: "Idempotency-Key" }),
      ],
      env,
    );
    provider = new HttpRequestProvider({ credentials, timeoutMs: 2000, maxResponseBytes: 4096 });
  });
  afterAll(async () => {
    await Promise.all([upstream.close(), elsewhere.close()]);
  });
  afterEach(() => {
    upstream.received.length = 0;
    elsewhere.received.length = 0;
    upstream.handler = (_request, response) => response.end("ok");
  });

  const get = (path: string, args: JsonObject = {}) => operation({ credential: "example", path }, { method: "GET", ...args });

  describe("the secret", () => {
    it("reaches the upstream in the configured header with its scheme", async () => {
      await provider.execute(get("/things"), context());
      expect(upstream.received[0]?.headers.authorization).toBe(`Bearer ${SECRET}`);
      expect(upstream.received[0]?.url).toBe("/api/things");
    });

    it("travels bare in a custom header when no scheme is configured", async () => {
      await provider.execute(operation({ credential: "keyed", path: "things" }, { method: "GET" }), context());
      expect(upstream.received[0]?.headers["x-api-key"]).toBe(KEY_SECRET);
      expect(upstream.received[0]?.headers.authorization).toBeUndefined();
      expect(upstream.received[0]?.url).toBe("/things");
    });

    it("appears nowhere in a result whose upstream echoes it in body and headers", async () => {
      upstream.handler = (request, response) => {
        response.writeHead(200, {
          "content-type": "application/json",
          etag: `"${SECRET}"`,
          "x-request-id": String(request.headers.authorization),
          location: `/api/next?token=${SECRET}`,
        });
        response.end(
          JSON.stringify({
            echoed: request.headers,
            [SECRET]: "as a key",
            base64: Buffer.from(`user:${SECRET}`).toString("base64"),
            encoded: encodeURIComponent(`Bearer ${SECRET}`),
          }),
        );
      };
      const outcome = await provider.execute(get("/echo"), context());
      const result = resultOf(outcome);
      expect(result.status).toBe(200);
      expect((result.body as JsonObject).echoed).toMatchObject({ authorization: "Bearer [REDACTED]" });
      expect(result.headers).toMatchObject({ location: `${upstream.url}/api/next`, "x-request-id": "Bearer [REDACTED]" });
      expect(JSON.stringify(outcome)).not.toContain(SECRET);
      expect(JSON.stringify(outcome)).not.toContain(Buffer.from(SECRET).toString("base64").slice(4, 20));
    });

    it("appears nowhere in a text result, even cut in half by the size bound", async () => {
      const filler = "x".repeat(4096 - 10);
      upstream.handler = (_request, response) => response.end(`${SECRET} then ${filler}${SECRET}`);
      const result = resultOf(await provider.execute(get("/echo"), context()));
      expect(result.truncated).toBe(true);
      expect(result.body).toMatch(/^\[REDACTED\] then x+$/);
      expect(JSON.stringify(result)).not.toContain(SECRET.slice(0, 6));
    });

    it("appears nowhere in the presentation", () => {
      const presentation = provider.present({ credential: "example", path: "/things" }, { method: "get", query: { q: "v" } });
      expect(presentation.title).toBe("HTTP GET example /things");
      expect(JSON.stringify(presentation)).not.toContain(SECRET);
    });

    it("appears nowhere in what an ambiguous failure throws", async () => {
      upstream.handler = (request) => request.socket.destroy();
      const error = await provider.execute(get("/reset"), context()).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(AxonError);
      expect(JSON.stringify({ message: (error as Error).message, stack: (error as Error).stack, cause: (error as Error).cause })).not.toContain(SECRET);
      expect((error as AxonError).cause).toBeUndefined();
    });

    it("missing from the environment fails the operation with a clear code and sends nothing", async () => {
      const outcome = await provider.execute(operation({ credential: "unset", path: "/x" }, { method: "GET" }), context());
      expect(outcome).toEqual({ state: "failed", code: "credential_unavailable", message: "the secret of credential unset is not set on this server" });
      expect(upstream.received).toHaveLength(0);
    });

    it("that cannot be a header value fails the operation without quoting it", async () => {
      const broken = new HttpRequestProvider({
        credentials: new Credentials([credential("example", upstream.url)], { EXAMPLE_TOKEN: `${SECRET}\r\nX-Injected: 1` }),
      });
      const outcome = await broken.execute(get("/x"), context());
      expect(outcome).toMatchObject({ state: "failed", code: "credential_unavailable" });
      expect(JSON.stringify(outcome)).not.toContain(SECRET);
      expect(upstream.received).toHaveLength(0);
    });
  });

  describe("validation", () => {
    const pathViolations = (path: string) =>
      provider.validate({ credential: "example", path }, { method: "GET" }).filter((violation) => violation.field === "target.path");

    it.each([
      "../secrets",
      "/../secrets",
      "a/../../b",
      "./a",
      ".",
      "..",
      "%2e%2e/x",
      "%2E%2E/x",
      ".%2e/x",
      "a/%2e%2e/%2e%2e/b",
      "%252e%252e/x",
      "..%2fx",
      "a%2F..%2F..%2Fb",
      "a%5c..%5cb",
      "..;/x",
      "a\\..\\b",
      "\\\\evil.example\\x",
      "https://evil.example/x",
      "http:evil.example",
      "//evil.example/x",
      "/a//b",
      "a?x=1",
      "a#fragment",
      "a b",
      "caf\u00e9",
      "a\u0000b",
      "a\nb",
      "%zz",
      "%",
    ])("refuses the path %j", (path) => {
      expect(pathViolations(path)).toHaveLength(1);
    });

    it.each([
      "/%c0%ae%c0%ae/x", // overlong dots: `..` to a lax decoder
      "%c0%af", // an overlong slash
      "a/%e0%80%ae%e0%80%ae/b", // three-byte overlong dots
      "%25c0%25ae%25c0%25ae/x", // the same overlong dots, encoded twice
      "%ff",
      "%80x",
      "caf%C3",
      "%ed%a0%80", // a UTF-16 surrogate
      "%f4%90%80%80", // beyond U+10FFFF
    ])("refuses the path %j: its percent-decoding is not UTF-8", (path) => {
      expect(pathViolations(path)).toEqual([
        { field: "target.path", description: "must percent-decode to UTF-8 (overlong and invalid byte sequences are refused)" },
      ]);
    });

    it.each([
      "%ef%bc%8e%ef%bc%8e/x", // fullwidth full stops
      "%e2%80%a5/x", // the two-dot leader
      "a/%e2%80%a4", // the one-dot leader
      "a%ef%bc%8fb", // a fullwidth solidus
      "a%ef%b9%a8b", // a small reverse solidus
    ])("refuses the path %j: Unicode compatibility folds it into a dot segment or a separator", (path) => {
      expect(pathViolations(path)).toEqual([{ field: "target.path", description: "may not contain dot segments, encoded slashes or control characters" }]);
    });

    it("never forwards a path with overlong dots, even when the configuration let it through to execution", async () => {
      const outcome = await provider.execute(get("/%c0%ae%c0%ae/x"), context());
      expect(outcome).toMatchObject({ state: "failed", code: "invalid_operation" });
      expect(upstream.received).toHaveLength(0);
    });

    it("refuses a path longer than 2048 characters", () => {
      expect(pathViolations("x".repeat(2049))).toHaveLength(1);
    });

    it.each(["/things", "things/1", "", "/", "/v1/things:batchGet", "a/b/", "caf%C3%A9", "a%20b", "..a/b..", "@me/~x", "%e2%82%ac", "%F0%9F%98%80", "100%25", "%25c3%25a9", "a%e2%80%a6b"])(
      "accepts the path %j under the base URL",
      (path) => {
        expect(pathViolations(path)).toEqual([]);
      },
    );

    it("joins an accepted path under the base path, encoded as given", async () => {
      await provider.execute(get("/v1/things:batchGet/caf%C3%A9"), context());
      expect(upstream.received[0]?.url).toBe("/api/v1/things:batchGet/caf%C3%A9");
    });

    it("refuses an unknown credential and reports every problem at once", () => {
      expect(provider.validate({ credential: "nope", path: "../x", extra: 1 }, { method: "BREW", other: true })).toEqual([
        { field: "target.extra", description: "unknown field" },
        { field: "arguments.other", description: "unknown field" },
        { field: "target.credential", description: "no credential by this name is configured" },
        { field: "target.path", description: expect.any(String) },
        { field: "arguments.method", description: expect.any(String) },
      ]);
    });

    it("with no credentials configured, every target names an unknown credential", () => {
      const empty = new HttpRequestProvider({ credentials: new Credentials() });
      expect(empty.validate({ credential: "example", path: "/x" }, { method: "GET" })).toEqual([
        { field: "target.credential", description: "no credential by this name is configured" },
      ]);
    });

    it("refuses a method the credential does not allow", () => {
      expect(provider.validate({ credential: "keyed", path: "/x" }, { method: "POST" })).toEqual([
        { field: "arguments.method", description: "this credential allows only GET" },
      ]);
      expect(provider.validate({ credential: "example", path: "/x" }, { method: "TRACE" })[0]?.field).toBe("arguments.method");
      expect(provider.validate({ credential: "example", path: "/x" }, {})[0]?.field).toBe("arguments.method");
    });

    it("refuses headers outside the allow list, the credential's header and values that could split a header", () => {
      const headers = {
        Authorization: "Bearer mine",
        cookie: "a=b",
        host: "evil.example",
        "x-forwarded-for": "1.2.3.4",
        accept: "application/json\r\nX-Injected: 1",
        "if-match": 7,
      };
      expect(provider.validate({ credential: "example", path: "/x" }, { method: "GET", headers }).map((violation) => violation.field)).toEqual([
        "arguments.headers.Authorization",
        "arguments.headers.cookie",
        "arguments.headers.host",
        "arguments.headers.x-forwarded-for",
        "arguments.headers.accept",
        "arguments.headers.if-match",
      ]);
      expect(provider.validate({ credential: "keyed", path: "/x" }, { method: "GET", headers: { "X-API-KEY": "mine" } })).toEqual([
        { field: "arguments.headers.X-API-KEY", description: "carries the credential and is set by the server" },
      ]);
      expect(provider.validate({ credential: "example", path: "/x" }, { method: "GET", headers: { accept: "a", Accept: "b" } })).toEqual([
        { field: "arguments.headers.Accept", description: "is given twice" },
      ]);
    });

    it("refuses a body on GET, query values that are not scalars, and sealed bodies for now", () => {
      expect(provider.validate({ credential: "example", path: "/x" }, { method: "GET", body: { a: 1 } })).toEqual([
        { field: "arguments.body", description: "a GET request carries no body" },
      ]);
      expect(provider.validate({ credential: "example", path: "/x" }, { method: "GET", query: { a: [1], b: { c: 1 }, d: null } }).map((v) => v.field)).toEqual([
        "arguments.query.a",
        "arguments.query.b",
        "arguments.query.d",
      ]);
      expect(provider.validate({ credential: "example", path: "/x" }, { method: "POST", body_sealed: "sealed_abc" })).toEqual([
        { field: "arguments.body_sealed", description: "sealed request bodies are not supported on this server" },
      ]);
      expect(provider.validate({ credential: "example", path: "/x" }, { method: "GET", query: { q: "x".repeat(9000) } })[0]?.field).toBe("arguments.query");
    });

    it("an operation that no longer validates at execution fails without a request", async () => {
      const outcome = await provider.execute(operation({ credential: "gone", path: "/x" }, { method: "GET" }), context());
      expect(outcome).toMatchObject({ state: "failed", code: "credential_not_configured" });
      expect(upstream.received).toHaveLength(0);
    });
  });

  describe("the query", () => {
    const queryOf = (json: string) => ({ method: "GET", query: JSON.parse(json) as JsonObject });
    const sentUrl = async (json: string) => {
      resultOf(await provider.execute(operation({ credential: "example", path: "/q" }, queryOf(json)), context()));
      return upstream.received.at(-1)?.url;
    };

    it("refuses a __proto__ parameter, which storing the operation would drop, instead of silently not sending it", () => {
      expect(provider.validate({ credential: "example", path: "/q" }, queryOf('{"page": "1", "__proto__": "x"}'))).toEqual([
        { field: "arguments.query.__proto__", description: "is a key the store would drop: rename it" },
      ]);
    });

    it("sends parameters named after Object.prototype's members exactly", async () => {
      expect(await sentUrl('{"constructor": "c", "toString": "t", "hasOwnProperty": "h", "valueOf": "v"}')).toBe(
        "/api/q?constructor=c&toString=t&hasOwnProperty=h&valueOf=v",
      );
    });

    it.each([
      ['{"a\\u0000": "x"}', "arguments.query.a", "key may not contain NUL characters"],
      ['{"a": "x\\u0000"}', "arguments.query.a", "may not contain NUL characters"],
      ['{"a": "\\ud800"}', "arguments.query.a", "must be well-formed Unicode (it has an unpaired surrogate)"],
      ['{"\\udc00": "x"}', "arguments.query.", "key must be well-formed Unicode (it has an unpaired surrogate)"],
      ['{"n": 1e400}', "arguments.query.n", "must be a finite number"],
    ])("refuses %s, which would be stored or sent as something else", (json, field, description) => {
      expect(provider.validate({ credential: "example", path: "/q" }, queryOf(json))).toEqual([{ field, description }]);
    });

    it.each(["1e21", "9007199254740993", "1e-7", "-2.5e-10"])("refuses the number %s: as text it would not be the number sent", (number) => {
      expect(provider.validate({ credential: "example", path: "/q" }, queryOf(`{"n": ${number}}`))).toEqual([
        { field: "arguments.query.n", description: "has no exact plain decimal form as a number: give it as a string" },
      ]);
    });

    it("sends numbers in plain decimal, and every character of names and values percent-encoded as UTF-8", async () => {
      expect(await sentUrl('{"n": -3, "x": 1.5, "max": 9007199254740991, "a b+c": "d=e&f é/?#%"}')).toBe(
        "/api/q?n=-3&x=1.5&max=9007199254740991&a%20b%2Bc=d%3De%26f%20%C3%A9%2F%3F%23%25",
      );
    });
  });

  describe("presentation", () => {
    it("names credential, method and path; shows query keys, header names and body size but no values", () => {
      const presentation = provider.present(
        { credential: "example", path: "v1/things" },
        { method: "POST", query: { page: "secret-page-value" }, headers: { "idempotency-key": "k-value" }, body: { amount: 12345 } },
      );
      expect(presentation.title).toBe("HTTP POST example /v1/things");
      expect(presentation.summary).toBe(`POST ${upstream.url}/api/v1/things with credential example; query page; headers idempotency-key; a JSON body of 16 bytes`);
    });

    it("stays within its bounds and printable for any input", () => {
      const presentation = provider.present({ credential: "x\u0007".repeat(100), path: "p\n".repeat(1000) }, { method: 42 });
      expect(presentation.title.length).toBeLessThanOrEqual(160);
      expect(presentation.summary.length).toBeLessThanOrEqual(500);
      expect(presentation.title + presentation.summary).not.toMatch(/[\u0000-\u001f]/);
    });
  });

  describe("execution", () => {
    it("sends the query, allowed headers and a JSON body", async () => {
      upstream.handler = (_request, response) => response.writeHead(201).end();
      const result = resultOf(
        await provider.execute(
          operation(
            { credential: "example", path: "/things" },
            { method: "post", query: { q: "a b&c", n: 1, f: true }, headers: { "Idempotency-Key": "k1" }, body: { name: "x" } },
          ),
          context(),
        ),
      );
      expect(result).toEqual({ status: 201, headers: {}, body: "", truncated: false });
      const received = upstream.received[0];
      expect(received?.method).toBe("POST");
      expect(received?.url).toBe("/api/things?q=a%20b%26c&n=1&f=true");
      expect(received?.headers["idempotency-key"]).toBe("k1");
      expect(received?.headers["content-type"]).toBe("application/json");
      expect(received?.body).toBe('{"name":"x"}');
    });

    it("sends a string body as text unless a content type is given", async () => {
      await provider.execute(operation({ credential: "example", path: "/t" }, { method: "PUT", body: "plain" }), context());
      await provider.execute(
        operation({ credential: "example", path: "/t" }, { method: "PUT", body: "<a/>", headers: { "content-type": "application/xml" } }),
        context(),
      );
      expect(upstream.received.map((received) => [received.headers["content-type"], received.body])).toEqual([
        ["text/plain; charset=utf-8", "plain"],
        ["application/xml", "<a/>"],
      ]);
    });

    it("parses a JSON answer and keeps only the allow-listed headers", async () => {
      upstream.handler = (_request, response) => {
        response.writeHead(200, {
          "content-type": "application/problem+json; charset=utf-8",
          etag: '"v1"',
          "set-cookie": "session=abc",
          "x-internal": "hidden",
        });
        response.end(JSON.stringify({ items: [1, 2], name: "n\u0000ul", __proto__: { polluted: true } }));
      };
      const result = resultOf(await provider.execute(get("/things"), context()));
      expect(result.body).toEqual({ items: [1, 2], name: "n\ufffdul" });
      expect(result.headers).toEqual({ "content-type": "application/problem+json; charset=utf-8", etag: '"v1"' });
      expect(result.truncated).toBe(false);
    });

    it("keeps JSON nested too deep to store as text", async () => {
      upstream.handler = (_request, response) => {
        response.writeHead(200, { "content-type": "application/json" });
        response.end(`${"[".repeat(100)}${"]".repeat(100)}`);
      };
      expect(resultOf(await provider.execute(get("/deep"), context())).body).toBe(`${"[".repeat(100)}${"]".repeat(100)}`);
    });

    it("bounds the response and says it was truncated; a cut JSON body stays text", async () => {
      upstream.handler = (_request, response) => {
        response.writeHead(200, { "content-type": "application/json" });
        response.end(JSON.stringify({ data: "y".repeat(100_000) }));
      };
      const result = resultOf(await provider.execute(get("/big"), context()));
      expect(result.truncated).toBe(true);
      expect(typeof result.body).toBe("string");
      expect(Buffer.byteLength(result.body as string)).toBe(4096);
    });

    it("a body that breaks off after the status is a truncated answer, not an error", async () => {
      upstream.handler = (_request, response) => {
        response.writeHead(200, { "content-type": "text/plain", "content-length": "1000" });
        response.write("partial");
        setTimeout(() => response.socket?.destroy(), 20);
      };
      const result = resultOf(await provider.execute(get("/partial"), context()));
      expect(result).toMatchObject({ status: 200, body: "partial", truncated: true });
    });

    it("does not follow a redirect: the 3xx is the result, its location reduced", async () => {
      upstream.handler = (_request, response) => {
        response.writeHead(302, { location: `${elsewhere.url}/steal?token=abc#frag` });
        response.end();
      };
      const result = resultOf(await provider.execute(get("/moved"), context()));
      expect(result.status).toBe(302);
      expect(result.headers).toMatchObject({ location: `${elsewhere.url}/steal` });
      expect(elsewhere.received).toHaveLength(0);
    });

    it("a 4xx or 5xx is a result, not an error", async () => {
      upstream.handler = (_request, response) => {
        response.writeHead(503, { "content-type": "application/json", "retry-after": "7" });
        response.end(JSON.stringify({ message: "down for maintenance", internal: "stack trace here" }));
      };
      const result = resultOf(await provider.execute(get("/busy"), context()));
      expect(result).toMatchObject({ status: 503, headers: { "retry-after": "7" }, body: "down for maintenance", truncated: false });
    });

    it("HEAD answers with an empty body", async () => {
      upstream.handler = (_request, response) => response.writeHead(200, { "content-type": "text/plain", "content-length": "5" }).end();
      const result = resultOf(await provider.execute(operation({ credential: "example", path: "/x" }, { method: "HEAD" }), context()));
      expect(result).toEqual({ status: 200, headers: { "content-type": "text/plain", "content-length": "5" }, body: "", truncated: false });
    });

    it("a hostile error body is reduced to its sanitized message", async () => {
      const jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZG1pbiJ9.c2lnbmF0dXJlLXZhbHVlLWhlcmU";
      upstream.handler = (_request, response) => {
        response.writeHead(401, { "content-type": "application/json" });
        response.end(
          JSON.stringify({
            error: {
              message: `bad key ${SECRET} \u001b[31mred\u0007 Bearer abcDEF123456ghiJKL session ${jwt} see https://evil.example/path?token=xyz ${"z".repeat(10_000)}`,
              raw_request: { authorization: `Bearer ${SECRET}` },
            },
          }),
        );
      };
      const result = resultOf(await provider.execute(get("/denied"), context()));
      const body = result.body as string;
      expect(result.status).toBe(401);
      expect(body.length).toBeLessThanOrEqual(500);
      expect(body).toContain("bad key [REDACTED]");
      expect(body).not.toContain(SECRET);
      expect(body).not.toContain("abcDEF123456ghiJKL");
      expect(body).not.toContain(jwt.slice(0, 20));
      expect(body).not.toContain("/path");
      expect(body).not.toMatch(/[\u0000-\u001f\u007f]/);
      expect(JSON.stringify(result)).not.toContain("raw_request");
    });

    it("a plain-text error body echoing the header is sanitized too", async () => {
      upstream.handler = (request, response) => response.writeHead(500).end(`rejected Authorization: ${request.headers.authorization}`);
      const result = resultOf(await provider.execute(get("/echo-error"), context()));
      expect(result.status).toBe(500);
      expect(result.body).not.toContain(SECRET);
      expect(result.body).toContain("rejected");
    });

    it("connection refused fails as operation_upstream_unavailable: nothing was sent", async () => {
      const closed = await Upstream.start();
      await closed.close();
      const refused = new HttpRequestProvider({ credentials: new Credentials([credential("example", closed.url)], env) });
      expect(await refused.execute(get("/x"), context())).toEqual({
        state: "failed",
        code: "operation_upstream_unavailable",
        message: "the upstream refused the connection",
      });
    });

    it("a host name that does not resolve fails as operation_upstream_unavailable", async () => {
      const nowhere = new HttpRequestProvider({ credentials: new Credentials([credential("example", "http://axon-test.invalid")], env) });
      expect(await nowhere.execute(get("/x"), context())).toMatchObject({ state: "failed", code: "operation_upstream_unavailable" });
    });

    it("a port the HTTP client blocks fails as operation_upstream_unavailable", async () => {
      const blocked = new HttpRequestProvider({ credentials: new Credentials([credential("example", "http://127.0.0.1:6000")], env) });
      expect(await blocked.execute(get("/x"), context())).toMatchObject({ state: "failed", code: "operation_upstream_unavailable" });
    });

    it("an upstream that takes the request and never answers makes the outcome unknown (rejects)", async () => {
      upstream.handler = () => undefined; // holds the request open
      const quick = new HttpRequestProvider({ credentials, timeoutMs: 150 });
      const error = await quick.execute(get("/hang"), context()).catch((caught: unknown) => caught);
      expect(upstream.received).toHaveLength(1);
      expect(error).toBeInstanceOf(AxonError);
      expect((error as AxonError).reason).toBe("UPSTREAM_RESULT_UNKNOWN");
      expect((error as AxonError).metadata).toEqual({ cause: "timeout" });
    });

    it("a connection reset after the request was sent makes the outcome unknown (rejects)", async () => {
      upstream.handler = (request) => request.socket.destroy();
      const error = await provider.execute(get("/reset"), context()).catch((caught: unknown) => caught);
      expect(upstream.received).toHaveLength(1);
      expect(error).toMatchObject({ reason: "UPSTREAM_RESULT_UNKNOWN", metadata: { cause: "connection_lost" } });
    });

    it("an execution stopped before dispatch fails without sending", async () => {
      const controller = new AbortController();
      controller.abort();
      expect(await provider.execute(get("/x"), context(controller.signal))).toMatchObject({ state: "failed", code: "interrupted" });
      expect(upstream.received).toHaveLength(0);
    });

    it("cannot be reconciled after a crash when its upstream takes no idempotency key", async () => {
      expect(await provider.reconcile(get("/x"))).toBeUndefined();
      expect(upstream.received).toHaveLength(0);
    });
  });

  describe("an upstream that honours an idempotency key", () => {
    const charge = (id: string, headers: JsonObject = {}) => ({
      id,
      clientId: "client",
      operation: "http.request",
      target: { credential: "ledger", path: "/charges" },
      arguments: { method: "POST", body: { amount: 100 }, headers },
    });

    it("gets in the configured header a key of the operation's: the same on every send of it, another for another operation", async () => {
      await provider.execute(charge("op_first"), context());
      await provider.execute(charge("op_first"), context());
      await provider.execute(charge("op_second"), context());
      const keys = upstream.received.map((received) => received.headers["idempotency-key"]);
      expect(keys[0]).toMatch(/^[0-9a-f]{64}$/);
      expect(keys).toEqual([keys[0], keys[0], upstreamIdempotencyKey("op_second")]);
      expect(keys[0]).toBe(upstreamIdempotencyKey("op_first"));
      expect(keys[0]).not.toBe(keys[2]);
    });

    it("gets the server's key even when the agent sent a header of that name, and never the operation's id", async () => {
      await provider.execute(charge("op_agent_key", { "Idempotency-Key": "agent-chosen" }), context());
      const sent = upstream.received[0]?.headers["idempotency-key"];
      expect(sent).toBe(upstreamIdempotencyKey("op_agent_key"));
      expect(sent).not.toContain("agent-chosen");
      expect(sent).not.toContain("op_agent_key");
    });

    it("is replayed after a crash, and a request of another credential is not", async () => {
      expect(await provider.reconcile(charge("op_cut"))).toBe("replay");
      expect(await provider.reconcile(get("/x"))).toBeUndefined();
      // Deciding sends nothing: the worker replays it.
      expect(upstream.received).toHaveLength(0);
    });
  });
});
