import { createHash } from "node:crypto";
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { AxonError, type FieldViolation } from "../../errors.js";
import { REDACTED, sanitizeProviderError, secretVariants } from "../sanitize.js";
import { HTTP_METHODS, isHttpMethod, type Credential, type Credentials, type HttpMethod } from "./credentials.js";
import type { ExecutionContext, ExecutionOutcome, OperationToExecute, Presentation, Provider } from "./provider.js";
import { isJsonObject } from "../../json.js";
import { findUnstorableJson, maxJsonDepth, unstorableCharacter } from "../json-safety.js";
import { failed, fieldKey, printable, truncate } from "./transcript-text.js";

export interface HttpRequestProviderOptions {
  credentials: Credentials;
  /** From dispatch to the last byte of the response. Default 30 s. */
  timeoutMs?: number;
  /** Response body bytes kept; the rest is cut and the result says `truncated`. Default 1 MiB. */
  maxResponseBytes?: number;
  /** Where `body_sealed` references are opened; without it sealed bodies are refused at validation. */
  sealedBodies?: SealedBodies;
}

/**
 * Opens a sealed payload for its owner, once (Agent V1 §6). Refusals are AxonErrors whose reason names them
 * (SEALED_PAYLOAD_NOT_FOUND, _CONSUMED, _EXPIRED, _UNREADABLE); their messages never carry content.
 */
export interface SealedBodies {
  consume(clientId: string, id: string): Promise<Uint8Array>;
}

/**
 * Request headers an agent may set. Authorization, Cookie, Host and the credential's own header are never among
 * them: the server alone decides what identifies the request upstream.
 */
export const ALLOWED_REQUEST_HEADERS: readonly string[] = [
  "accept",
  "accept-language",
  "content-type",
  "idempotency-key",
  "if-match",
  "if-modified-since",
  "if-none-match",
  "if-unmodified-since",
  "x-request-id",
];

/** Response headers a result carries; the rest (Set-Cookie above all) stays with the server. */
export const RESULT_HEADERS: readonly string[] = [
  "content-type",
  "content-length",
  "etag",
  "last-modified",
  "location",
  "retry-after",
  "x-request-id",
];

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024;
const MAX_PATH_LENGTH = 2048;
/** Beyond this many servers refuse the request line; better said at validation than as a 414 after approval. */
const MAX_URL_LENGTH = 8192;
const MAX_HEADER_VALUE_LENGTH = 1024;
const MAX_RESULT_HEADER_LENGTH = 500;

/**
 * `http.request` (spec §8): a credential broker. The agent names a credential and a path under its base URL; the
 * server sends the request with the secret it alone holds, and answers with a bounded, secret-free result.
 */
export class HttpRequestProvider implements Provider {
  readonly operation = "http.request";
  private readonly credentials: Credentials;
  private readonly timeoutMs: number;
  private readonly maxResponseBytes: number;
  private readonly sealedBodies: SealedBodies | undefined;

  constructor(options: HttpRequestProviderOptions) {
    this.credentials = options.credentials;
    this.sealedBodies = options.sealedBodies;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  }

  validate(target: JsonObject, args: JsonObject): FieldViolation[] {
    return planRequest(this.credentials, target, args, this.sealedBodies !== undefined).violations;
  }

  present(target: JsonObject, args: JsonObject): Presentation {
    const credentialName = printable(target["credential"]) || "unknown";
    const method = printable(args["method"]).toUpperCase() || "REQUEST";
    const pathText = printable(target["path"]);
    const path = pathText.startsWith("/") ? pathText : `/${pathText}`;
    const credential = this.credentials.get(credentialName);

    const parts = [
      credential === undefined
        ? `${method} ${path} with the unknown credential ${credentialName}`
        : `${method} ${credential.origin}${credential.basePath}${path} with credential ${credentialName}`,
    ];
    const query = args["query"];
    if (isJsonObject(query) && Object.keys(query).length > 0) parts.push(`query ${Object.keys(query).map(printable).join(" ")}`);
    const headers = args["headers"];
    if (isJsonObject(headers) && Object.keys(headers).length > 0) {
      parts.push(`headers ${Object.keys(headers).map((name) => printable(name).toLowerCase()).join(" ")}`);
    }
    const body = args["body"];
    if (body !== undefined) {
      parts.push(typeof body === "string" ? `a text body of ${byteLength(body)} bytes` : `a JSON body of ${byteLength(JSON.stringify(body))} bytes`);
    }
    if (args["body_sealed"] !== undefined) parts.push("a sealed body");
    // Only names, the path and sizes: query, header and body values are the agent's data, not transcript text.
    return { title: truncate(`HTTP ${method} ${credentialName} ${path}`, 160), summary: truncate(parts.join("; "), 500) };
  }

  async execute(operation: OperationToExecute, context: ExecutionContext): Promise<ExecutionOutcome> {
    const { violations, request } = planRequest(this.credentials, operation.target, operation.arguments, this.sealedBodies !== undefined);
    if (request === undefined) {
      // Validated at submission; the configuration changed since (a credential removed, its methods narrowed).
      return violations.some((violation) => violation.field === "target.credential")
        ? failed("credential_not_configured", "the credential of this request is not configured on this server")
        : failed("invalid_operation", "the request is no longer valid under this server's credential configuration");
    }
    const { credential } = request;
    const secret = this.credentials.secretOf(credential);
    if (secret === undefined) {
      return failed("credential_unavailable", `the secret of credential ${credential.name} is not set on this server`);
    }
    const authorization = credential.scheme === undefined ? secret : `${credential.scheme} ${secret}`;
    // fetch would reject such a value with a message quoting it; say it without the value instead.
    if (!HEADER_VALUE.test(authorization)) {
      return failed("credential_unavailable", `the secret of credential ${credential.name} is not a valid header value`);
    }
    if (context.signal.aborted) return failed("interrupted", "execution stopped before the request was sent");

    // Opened last, just before dispatch: a request refused earlier leaves its sealed body unused.
    let body: string | Uint8Array | undefined = request.body;
    if (request.sealedBody !== undefined) {
      const opened = await this.openSealedBody(operation.clientId, request.sealedBody);
      if (opened.state !== "opened") return opened;
      body = opened.body;
    }

    const timeout = AbortSignal.timeout(this.timeoutMs);
    const signal = AbortSignal.any([context.signal, timeout]);
    const headers = new Headers(request.headers);
    headers.set(credential.header, authorization);
    // The server's key, never the agent's: it is what makes sending this again after a crash safe.
    if (credential.idempotencyHeader !== undefined) headers.set(credential.idempotencyHeader, upstreamIdempotencyKey(operation.id));

    let response: Response;
    try {
      response = await fetch(request.url, {
        method: request.method,
        headers,
        ...(body === undefined ? {} : { body }),
        // A redirect is the upstream's answer, never a reason to send the secret somewhere else.
        redirect: "manual",
        signal,
      });
    } catch (error) {
      const notSent = notSentReason(error);
      if (notSent !== undefined) return failed("operation_upstream_unavailable", notSent);
      // The request may have reached the upstream, which may have acted on it: only the lifecycle may decide what
      // that means (upstream_result_unknown). The original error stays behind: nothing of the request travels on.
      throw new AxonError(Code.Unavailable, "UPSTREAM_RESULT_UNKNOWN", "the request was sent but no answer arrived", {
        metadata: { cause: timeout.aborted ? "timeout" : context.signal.aborted ? "canceled" : "connection_lost" },
      });
    }

    // From here on the upstream has answered: whatever happens to the body, the outcome is proven.
    const { bytes, truncated } = await readBounded(response.body, this.maxResponseBytes);
    const redactions = [...secretVariants(secret), ...(body instanceof Uint8Array ? sealedVariants(body) : [])];
    const sealed = request.sealedBody !== undefined;
    if (body instanceof Uint8Array) body.fill(0);
    const text = new TextDecoder("utf-8", { fatal: false }).decode(bytes, { stream: truncated });
    let resultBody: JsonValue;
    if (response.status >= 400) {
      // Raw upstream error bodies are never stored (spec §7): only their documented message, sanitized. A sealed
      // request keeps none at all: the upstream may quote what it was sent (spec §6).
      resultBody = sealed ? null : sanitizeProviderError(text, { secrets: [secret] });
    } else {
      resultBody = parsedJson(response.headers.get("content-type"), text, truncated, redactions) ?? redactText(text, redactions, secret, truncated);
    }
    return {
      state: "succeeded",
      result: { status: response.status, headers: resultHeaders(response.headers, request.url, redactions), body: resultBody, truncated },
    };
  }

  /** The plaintext of a sealed body, or why it cannot be had: a refusal proven before anything was sent. */
  private async openSealedBody(clientId: string, id: string): Promise<{ state: "opened"; body: Uint8Array } | ExecutionOutcome> {
    try {
      return { state: "opened", body: await this.sealedBodies!.consume(clientId, id) };
    } catch (error) {
      if (error instanceof AxonError && error.reason.startsWith("SEALED_PAYLOAD_")) {
        return failed(error.reason.toLowerCase(), SEALED_REFUSALS[error.reason] ?? "the sealed body cannot be used");
      }
      // The store failed: nothing was sent, and nothing of the error (which may quote a query) travels on.
      return failed("sealed_payload_unavailable", "the sealed body could not be read");
    }
  }

  /**
   * An HTTP request cut by a crash cannot be proven either way, unless its upstream honours an idempotency key: then it
   * is sent again with the same key, and the upstream's answer (the first call's) is the outcome. A sealed body was
   * consumed by the first send and cannot be sent again; anything else stays unknown (upstream_result_unknown).
   */
  async reconcile(operation: OperationToExecute): Promise<"replay" | undefined> {
    const { request } = planRequest(this.credentials, operation.target, operation.arguments, this.sealedBodies !== undefined);
    return request?.credential.idempotencyHeader !== undefined && request.sealedBody === undefined ? "replay" : undefined;
  }
}

/**
 * The idempotency key the upstream sees for an operation: the same from every replica and after every restart, and
 * unique per operation, as the operation's id is. A hash of the id under a prefix of its own, so it is neither the id
 * nor the client's key, and no other use of the id yields it.
 */
export function upstreamIdempotencyKey(operationId: string): string {
  return createHash("sha256").update(`axon/http.request/idempotency-key/v1:${operationId}`).digest("hex");
}

interface PlannedRequest {
  credential: Credential;
  method: HttpMethod;
  url: URL;
  headers: [string, string][];
  body: string | undefined;
  /** The reference of a sealed payload to send as the body, opened only at execution. */
  sealedBody: string | undefined;
}

/** What the operation's error says of each refusal: the reference and its state, never the content. */
const SEALED_REFUSALS: Record<string, string> = {
  SEALED_PAYLOAD_NOT_FOUND: "the sealed body reference does not name a sealed payload of this client",
  SEALED_PAYLOAD_CONSUMED: "the sealed body was already used by another operation",
  SEALED_PAYLOAD_EXPIRED: "the sealed body has expired",
  SEALED_PAYLOAD_UNREADABLE: "the sealed body could not be opened",
};
const SEALED_REFERENCE = /^sealed_[A-Za-z0-9_-]{24}$/;
/** Shorter plaintexts are not looked for in the answer: they would redact unrelated text. */
const MIN_REDACTED_SEALED_LENGTH = 8;

/** The one reading of target and arguments: validation, and the request that execution sends. */
function planRequest(
  credentials: Credentials,
  target: JsonObject,
  args: JsonObject,
  sealedBodiesSupported: boolean,
): { violations: FieldViolation[]; request?: PlannedRequest } {
  const violations: FieldViolation[] = [];
  const violate = (field: string, description: string) => violations.push({ field, description });
  for (const key of Object.keys(target)) if (key !== "credential" && key !== "path") violate(`target.${fieldKey(key)}`, "unknown field");
  for (const key of Object.keys(args)) {
    if (!ARGUMENT_FIELDS.has(key)) violate(`arguments.${fieldKey(key)}`, "unknown field");
  }

  const name = target["credential"];
  const credential = typeof name === "string" ? credentials.get(name) : undefined;
  if (typeof name !== "string" || name === "") violate("target.credential", "is required: the name of a configured credential");
  else if (credential === undefined) violate("target.credential", "no credential by this name is configured");

  const path = target["path"];
  const pathProblem = pathProblemOf(path);
  if (pathProblem !== undefined) violate("target.path", pathProblem);

  const rawMethod = args["method"];
  const method = typeof rawMethod === "string" ? rawMethod.toUpperCase() : undefined;
  if (!isHttpMethod(method)) {
    violate("arguments.method", `is required: one of ${HTTP_METHODS.join(" ")}`);
  } else if (credential !== undefined && !credential.methods.includes(method)) {
    violate("arguments.method", `this credential allows only ${credential.methods.join(" ")}`);
  }

  let url: URL | undefined;
  if (credential !== undefined && pathProblem === undefined && typeof path === "string") {
    url = new URL(`${credential.origin}${credential.basePath}/${path.replace(/^\//, "")}`);
    // Defense in depth: whatever the parser made of the path, the request stays under the base URL.
    const underBase = url.pathname === credential.basePath || url.pathname.startsWith(`${credential.basePath}/`);
    if (url.origin !== credential.origin || !underBase || url.search !== "" || url.hash !== "") {
      violate("target.path", "must stay under the credential's base URL");
      url = undefined;
    }
  }

  const query = args["query"];
  if (query !== undefined && !isJsonObject(query)) violate("arguments.query", "must be an object of strings, numbers or booleans");
  else if (query !== undefined) {
    // What the store would drop or change (a `__proto__` key, NUL, an unpaired surrogate) would silently not be sent.
    const unstorable = findUnstorableJson(query, "arguments.query");
    if (unstorable !== undefined) violations.push(unstorable);
    else {
      const parameters: string[] = [];
      for (const [key, value] of Object.entries(query)) {
        const problem = key === "" ? "parameter names may not be empty" : queryValueProblem(value);
        if (problem !== undefined) violate(key === "" ? "arguments.query" : `arguments.query.${fieldKey(key)}`, problem);
        else parameters.push(`${encodeURIComponent(key)}=${encodeURIComponent(String(value))}`);
      }
      // %20, not form encoding's `+`: to an upstream that reads the query by RFC 3986 alone, `+` is a plus sign.
      if (url !== undefined && parameters.length > 0) url.search = parameters.join("&");
    }
  }
  if (url !== undefined && url.href.length > MAX_URL_LENGTH) violate("arguments.query", `makes the URL longer than ${MAX_URL_LENGTH} characters`);

  const headers: [string, string][] = [];
  const rawHeaders = args["headers"];
  if (rawHeaders !== undefined) {
    if (!isJsonObject(rawHeaders)) violate("arguments.headers", "must be an object of header names to string values");
    else {
      const seen = new Set<string>();
      for (const [headerName, value] of Object.entries(rawHeaders)) {
        const lower = headerName.toLowerCase();
        const field = `arguments.headers.${fieldKey(headerName)}`;
        if (credential !== undefined && lower === credential.header.toLowerCase()) violate(field, "carries the credential and is set by the server");
        else if (!ALLOWED_REQUEST_HEADERS.includes(lower)) violate(field, `is not an allowed header (allowed are ${ALLOWED_REQUEST_HEADERS.join(" ")})`);
        else if (seen.has(lower)) violate(field, "is given twice");
        else if (typeof value !== "string" || value.length > MAX_HEADER_VALUE_LENGTH || !HEADER_VALUE.test(value)) {
          violate(field, `must be a string of at most ${MAX_HEADER_VALUE_LENGTH} printable ASCII characters`);
        } else headers.push([lower, value]);
        seen.add(lower);
      }
    }
  }

  const body = args["body"];
  let encodedBody: string | undefined;
  const sealedBody = args["body_sealed"];
  if (sealedBody !== undefined) {
    if (!sealedBodiesSupported) violate("arguments.body_sealed", "sealed request bodies are not supported on this server");
    else if (typeof sealedBody !== "string" || !SEALED_REFERENCE.test(sealedBody)) violate("arguments.body_sealed", "must be a sealed payload reference (sealed_...)");
    if (body !== undefined) violate("arguments.body", "give body or body_sealed, not both");
    if (method === "GET" || method === "HEAD") violate("arguments.body_sealed", `a ${method} request carries no body`);
    if (!headers.some(([header]) => header === "content-type")) headers.push(["content-type", "application/octet-stream"]);
  }
  if (body !== undefined) {
    if (method === "GET" || method === "HEAD") violate("arguments.body", `a ${method} request carries no body`);
    encodedBody = typeof body === "string" ? body : JSON.stringify(body);
    if (!headers.some(([header]) => header === "content-type")) {
      headers.push(["content-type", typeof body === "string" ? "text/plain; charset=utf-8" : "application/json"]);
    }
  }

  if (violations.length > 0 || credential === undefined || url === undefined || !isHttpMethod(method)) return { violations };
  return {
    violations,
    request: { credential, method, url, headers, body: encodedBody, sealedBody: typeof sealedBody === "string" ? sealedBody : undefined },
  };
}

const ARGUMENT_FIELDS = new Set(["method", "query", "headers", "body", "body_sealed"]);
/** RFC 3986 path characters; anything else (space, `?`, `#`, `\`, non-ASCII, controls) must be percent-encoded or is refused. */
const PATH_CHARACTERS = /^[A-Za-z0-9\-._~!$&'()*+,;=:@%/]*$/;
/** Visible ASCII, space and tab: no line breaks to split a header with. */
const HEADER_VALUE = /^[\t\x20-\x7e]*$/;

/**
 * Why a target path could leave the credential's base URL, or undefined when it cannot. The path is joined to the
 * base path as it is, so everything a parser or an upstream might read as "go up" or "go elsewhere" is refused:
 * dot segments (also percent-encoded, nested encodings, and Tomcat's `..;`), encoded slashes and backslashes,
 * absolute URLs, `//host`, and escapes that do not decode to UTF-8.
 */
function pathProblemOf(path: JsonValue | undefined): string | undefined {
  if (typeof path !== "string") return "is required: a path under the credential's base URL";
  if (path.length > MAX_PATH_LENGTH) return `may be at most ${MAX_PATH_LENGTH} characters`;
  if (path.includes("\\")) return "may not contain backslashes";
  if (/^[A-Za-z][A-Za-z0-9+.-]*:/.test(path)) return "must be a path, not a URL";
  if (path.startsWith("//")) return "may not start with two slashes";
  if (!PATH_CHARACTERS.test(path)) return "may contain only URL path characters (percent-encode the rest; the query goes in arguments.query)";
  if (/%(?![0-9A-Fa-f]{2})/.test(path)) return "has a malformed percent escape";
  const segments = path.replace(/^\//, "").split("/");
  for (const [index, segment] of segments.entries()) {
    if (segment === "" && index < segments.length - 1) return "may not contain empty segments";
    const problem = segmentProblem(segment);
    if (problem !== undefined) return problem;
  }
  return undefined;
}

/**
 * Why a segment could leave its place in the hands of an upstream or proxy that decodes it, once or more. Each round
 * of percent-decoding must be UTF-8 (to a lax decoder the overlong `%c0%ae` is a dot), and neither the text nor its
 * Unicode compatibility form (`%ef%bc%8e` is a fullwidth dot) may be a dot segment or hold a separator.
 */
function segmentProblem(segment: string): string | undefined {
  let current = segment;
  for (let round = 0; round < 4; round++) {
    if (leavesItsPlace(current) || leavesItsPlace(current.normalize("NFKC"))) return "may not contain dot segments, encoded slashes or control characters";
    if (!PERCENT_ESCAPE.test(current)) return undefined;
    const decoded = utf8Text(percentDecoded(current));
    if (decoded === undefined) return "must percent-decode to UTF-8 (overlong and invalid byte sequences are refused)";
    current = decoded;
  }
  return "may not contain dot segments, encoded slashes or control characters"; // encodings nested this deep are not a path anyone means
}

function leavesItsPlace(text: string): boolean {
  const beforeParameters = text.split(";")[0];
  return beforeParameters === "." || beforeParameters === ".." || /[/\\\x00-\x1f\x7f]/.test(text);
}

const PERCENT_ESCAPE = /%[0-9A-Fa-f]{2}/;
const STRICT_UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** The bytes a text stands for once its escapes are decoded: each `%XX` one byte, everything else its UTF-8. */
function percentDecoded(text: string): Uint8Array {
  const parts = text.split(/(%[0-9A-Fa-f]{2})/);
  return Buffer.concat(parts.map((part, index) => (index % 2 === 1 ? Buffer.of(Number.parseInt(part.slice(1), 16)) : Buffer.from(part, "utf8"))));
}

function utf8Text(bytes: Uint8Array): string | undefined {
  try {
    return STRICT_UTF8.decode(bytes);
  } catch {
    return undefined;
  }
}

/**
 * A query value is sent as text, so a number only when its text is exactly the number: an integer JSON parsing may
 * have rounded (beyond 2^53), or one that prints with an exponent (`1e-7`, `1e+21`), must come as a string.
 */
function queryValueProblem(value: JsonValue): string | undefined {
  if (typeof value === "string" || typeof value === "boolean") return undefined;
  if (typeof value !== "number") return "must be a string, a number or a boolean";
  if (Number.isInteger(value) ? Number.isSafeInteger(value) : !String(value).includes("e")) return undefined;
  return "has no exact plain decimal form as a number: give it as a string";
}

// ---------------------------------------------------------------------------------------------------------------
// Dispatch outcomes

/**
 * Error codes that prove the request never left: they only arise while resolving the name, connecting, or in the TLS
 * handshake, all before a byte of the request is written. Codes an established (possibly reused) connection can also
 * report, such as EHOSTUNREACH or ECONNRESET, are left out: for them the request may have gone, so they stay ambiguous.
 */
const NOT_SENT: Record<string, string> = {
  ECONNREFUSED: "the upstream refused the connection",
  ENOTFOUND: "the upstream host name does not resolve",
  EAI_AGAIN: "the upstream host name could not be resolved",
  EAI_NONAME: "the upstream host name does not resolve",
  EAI_NODATA: "the upstream host name does not resolve",
  EAI_FAIL: "the upstream host name could not be resolved",
  EADDRNOTAVAIL: "the upstream address is not available",
  UND_ERR_CONNECT_TIMEOUT: "connecting to the upstream timed out",
  ERR_TLS_CERT_ALTNAME_INVALID: "the upstream's TLS certificate is not valid for its host",
  ERR_SSL_WRONG_VERSION_NUMBER: "the TLS handshake with the upstream failed",
};
/** OpenSSL's certificate verification failures (CERT_HAS_EXPIRED, DEPTH_ZERO_SELF_SIGNED_CERT, UNABLE_TO_GET_ISSUER_CERT...). */
const CERTIFICATE_FAILURE = /CERT|^UNABLE_TO_/;

/** A sanitized reason when the error proves nothing was sent; undefined when the request may have gone out. */
function notSentReason(error: unknown): string | undefined {
  const cause = error instanceof Error ? error.cause : undefined;
  // Happy Eyeballs tries several addresses and reports all their failures together.
  const causes = cause instanceof AggregateError ? cause.errors : [cause];
  const reasons = causes.map((each) => {
    // fetch refuses the ports the Fetch standard blocks (6000, 6667, 10080, ...) before opening anything.
    if (each instanceof Error && each.message === "bad port") return "the HTTP client refuses to connect to this port";
    const code = each instanceof Error ? (each as { code?: unknown }).code : undefined;
    if (typeof code !== "string") return undefined;
    return NOT_SENT[code] ?? (CERTIFICATE_FAILURE.test(code) ? "the upstream's TLS certificate was not accepted" : undefined);
  });
  if (reasons.length === 0 || reasons.some((reason) => reason === undefined)) return undefined;
  return reasons[0];
}

/** Reads at most `limit` bytes. A body that breaks off after the status arrived is a truncated answer, not an error. */
async function readBounded(body: ReadableStream<Uint8Array> | null, limit: number): Promise<{ bytes: Uint8Array; truncated: boolean }> {
  if (body === null) return { bytes: new Uint8Array(0), truncated: false };
  const chunks: Uint8Array[] = [];
  let size = 0;
  let truncated = false;
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (size + value.byteLength > limit) {
        chunks.push(value.subarray(0, limit - size));
        size = limit;
        truncated = true;
        break;
      }
      chunks.push(value);
      size += value.byteLength;
    }
  } catch {
    truncated = true;
  } finally {
    if (truncated) await reader.cancel().catch(() => undefined);
  }
  return { bytes: Buffer.concat(chunks, size), truncated };
}

function parsedJson(contentType: string | null, text: string, truncated: boolean, redactions: string[]): JsonValue | undefined {
  if (truncated || contentType === null || !/^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i.test(contentType.trim())) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  return storableJson(parsed, redactions, 0);
}

/** A parsed body with every string (keys too) redacted and storable; undefined when nested too deep to keep as JSON. */
function storableJson(value: unknown, redactions: string[], depth: number): JsonValue | undefined {
  if (typeof value === "string") return storableText(redactVariants(value, redactions));
  if (value === null || typeof value === "number" || typeof value === "boolean") return value;
  if (depth >= maxJsonDepth) return undefined;
  if (Array.isArray(value)) {
    const items: JsonValue[] = [];
    for (const item of value) {
      const stored = storableJson(item, redactions, depth + 1);
      if (stored === undefined) return undefined;
      items.push(stored);
    }
    return items;
  }
  const object: JsonObject = {};
  for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
    const stored = storableJson(item, redactions, depth + 1);
    if (stored === undefined) return undefined;
    // defineProperty: a `__proto__` key from upstream JSON stays a plain key.
    Object.defineProperty(object, storableText(redactVariants(key, redactions)), { value: stored, enumerable: true, writable: true, configurable: true });
  }
  return object;
}

/** The body as text with the secret redacted; a cut that leaves the secret's first characters at the end drops them. */
function redactText(text: string, redactions: string[], secret: string, truncated: boolean): string {
  let redacted = redactVariants(text, redactions);
  if (truncated) {
    for (let length = Math.min(secret.length - 1, redacted.length); length >= 4; length--) {
      if (redacted.endsWith(secret.slice(0, length))) {
        redacted = redacted.slice(0, -length);
        break;
      }
    }
  }
  return storableText(redacted);
}

/**
 * The upstream may echo what we sent it. Successful bodies keep their content (sanitizing them would destroy data),
 * so only the secret is taken out, in every spelling the sanitizer knows.
 */
function redactVariants(text: string, redactions: string[]): string {
  let result = text;
  for (const variant of redactions) if (result.includes(variant)) result = result.split(variant).join(REDACTED);
  return result;
}

const UNSTORABLE_CHARACTERS = new RegExp(unstorableCharacter.source, "g");

/** What the store cannot keep (NUL, unpaired surrogates) becomes U+FFFD: an upstream's answer is kept as it can be. */
function storableText(text: string): string {
  return text.replace(UNSTORABLE_CHARACTERS, "\ufffd");
}

function resultHeaders(headers: Headers, requestUrl: URL, redactions: string[]): JsonObject {
  const result: JsonObject = {};
  for (const name of RESULT_HEADERS) {
    const value = headers.get(name);
    if (value === null) continue;
    const shown = name === "location" ? reducedLocation(value, requestUrl) : value;
    if (shown === undefined) continue;
    result[name] = truncate(storableText(redactVariants(shown, redactions)).replace(/[\x00-\x1f\x7f]/g, ""), MAX_RESULT_HEADER_LENGTH);
  }
  return result;
}

/** Where a redirect points, without its query, fragment or user info (signed URLs carry their tokens there). */
function reducedLocation(location: string, requestUrl: URL): string | undefined {
  try {
    const url = new URL(location, requestUrl);
    return url.protocol === "http:" || url.protocol === "https:" ? `${url.origin}${url.pathname}` : undefined;
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------------------------------

/** The spellings of a sealed body an upstream could echo back: as text, and as a JSON string. */
function sealedVariants(plaintext: Uint8Array): string[] {
  const text = new TextDecoder("utf-8", { fatal: false }).decode(plaintext);
  if (text.length < MIN_REDACTED_SEALED_LENGTH) return [];
  const escaped = JSON.stringify(text).slice(1, -1);
  return escaped === text ? [text] : [text, escaped];
}

function byteLength(text: string): number {
  return Buffer.byteLength(text, "utf8");
}

