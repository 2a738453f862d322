/**
 * Provider error text -> text a client may see (spec §7). Upstream messages can echo what we sent them (our
 * credential, a signed URL, a token in a query) and can carry terminal escapes or invisible characters, so every
 * provider message passes through here before it lands in an operation's `error.message`.
 *
 * Covered:
 * - the configured secrets, found even when the text splits them with whitespace or control/invisible characters,
 *   and in these encodings: percent-encoding (encodeURIComponent), JSON string escaping, base64 and base64url at any
 *   byte alignment (so `base64("user:" + secret)` inside a `Basic` header is caught too);
 * - `Bearer <token>` / `Basic <token>`, `ghp_` / `gho_` / `ghu_` / `ghs_` / `ghr_` / `github_pat_` tokens, `sk-...`,
 *   Slack `xox?-`, Google `AIza...`, GitLab `glpat-`, npm `npm_`, AWS access key ids (`AKIA...`), JWTs, PEM private keys;
 * - `name=value` and `name: value` forms (also quoted JSON) whose name contains token, secret, password, passwd, pwd,
 *   api key, access key, private key, authorization, credential, signature, session id or cookie;
 * - runs of 32 or more characters of `[A-Za-z0-9+/=_-]` that mix at least two of lower case, upper case and digits and
 *   are not repetitive (AWS secret keys, hex and base64 keys; also UUIDs and hashes, deliberately);
 * - URLs of any scheme, reduced to `scheme://host[:port]` (path, query, fragment and userinfo dropped).
 *
 * Not covered: secrets in other encodings (hex, base32, gzip, reversed, case-changed), fragments of a secret shorter
 * than the whole, and low-entropy passwords in free text with no `password=`-like name before them. Providers should
 * keep secrets out of their messages; this is the last line, not the only one.
 */

import { isJsonObject } from "../json.js";

export interface SanitizeOptions {
  /** The credentials this operation used (and any others worth hiding); each is redacted wherever it appears. */
  secrets?: readonly string[];
}

export const SANITIZED_MAX_LENGTH = 500;
export const REDACTED = "[REDACTED]";

/** Text beyond this is never looked at: bounds the work a huge upstream body can cause. */
const INPUT_LIMIT = 64 * 1024;

export function sanitizeProviderText(text: string, options: SanitizeOptions = {}): string {
  let result = String(text)
    // Terminal escape sequences go whole (CSI such as colours, OSC such as window titles), not just their ESC byte.
    .replace(/(?:\u001b\[|\u009b)[0-9:;<=>?]*[ -/]*[@-~]/g, "")
    .replace(/(?:\u001b\]|\u009d)[^\u0007\u001b\u009c]*(?:\u0007|\u001b\\|\u009c)?/g, "")
    // Invisible formatting characters (zero-width, bidi overrides, BOM) and lone surrogates go; they could hide or
    // split a token. Control characters and line separators become spaces so words stay apart.
    .replace(/[\p{Cf}\p{Cs}]/gu, "")
    .replace(/[\p{Cc}\p{Zl}\p{Zp}]/gu, " ")
    .replace(/\s+/g, " ")
    .trim();
  if (result.length > INPUT_LIMIT) {
    // Drop the cut-off last token too: it may be the first half of something a pattern would have caught whole.
    result = result.slice(0, INPUT_LIMIT).replace(/\S+$/, "");
  }

  result = result.replace(/-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)/g, REDACTED);
  result = redactSecrets(result, options.secrets ?? []);
  result = result.replace(URL_PATTERN, (_match, scheme: string, authority: string) => `${scheme}://${hostOf(authority)}`);
  for (const pattern of TOKEN_PATTERNS) result = result.replace(pattern, REDACTED);
  result = result.replace(AUTHORIZATION_SCHEME, (match, scheme: string, space: string, value: string) =>
    looksLikeCredential(value) ? `${scheme}${space}${REDACTED}` : match,
  );
  result = result.replace(NAMED_VALUE, (_match, name: string, separator: string) => `${name}${separator}${REDACTED}`);
  result = result.replace(LONG_RUN, (run) => (isHighEntropy(run) ? REDACTED : run));

  return truncate(result.replace(/\s+/g, " ").trim(), SANITIZED_MAX_LENGTH);
}

/**
 * The message of a provider's error body, sanitized. JSON bodies (text, bytes or already parsed) keep only their
 * documented message field: `error.message`, `message`, `error_description`, `detail`, `error` (a string),
 * `errors[0].message`; a JSON body with none of them yields "". HTML pages yield their `<title>` or "". Anything else
 * is treated as plain text. "" means "nothing safe to show": the caller uses its own generic message.
 */
export function sanitizeProviderError(body: unknown, options: SanitizeOptions = {}): string {
  const message = messageOf(body);
  return message === undefined ? "" : sanitizeProviderText(message, options);
}

function messageOf(body: unknown): string | undefined {
  if (body instanceof Uint8Array) return messageOf(new TextDecoder("utf-8", { fatal: false }).decode(body));
  if (typeof body === "string") {
    const trimmed = body.trim();
    if (trimmed.startsWith("{") || trimmed.startsWith("[")) {
      try {
        return messageOfJson(JSON.parse(trimmed));
      } catch {
        // Not JSON after all: plain text.
      }
    }
    if (/^<(?:!doctype|html|\?xml|head|body)/i.test(trimmed)) {
      const title = /<title[^>]*>([^<]{0,2000})<\/title>/i.exec(trimmed);
      return title?.[1];
    }
    return body;
  }
  return messageOfJson(body);
}

function messageOfJson(value: unknown): string | undefined {
  if (Array.isArray(value)) return messageOfJson(value[0]);
  if (!isJsonObject(value)) return undefined;
  const error = value.error;
  const errors = value.errors;
  const candidates: unknown[] = [
    isJsonObject(error) ? error.message : undefined,
    value.message,
    value.error_description,
    value.detail,
    error,
    Array.isArray(errors) && isJsonObject(errors[0]) ? errors[0].message : undefined,
  ];
  return candidates.find((candidate): candidate is string => typeof candidate === "string" && candidate.trim() !== "");
}

// ---------------------------------------------------------------------------------------------------------------
// Configured secrets

/** Characters a token is made of: a match is widened over them so no tail of an encoded secret stays behind. */
const TOKEN_CHARACTER = /[A-Za-z0-9+/=_.~%-]/;

function redactSecrets(text: string, secrets: readonly string[]): string {
  const needles = new Set<string>();
  for (const secret of secrets) for (const variant of secretVariants(secret)) needles.add(variant);
  if (needles.size === 0) return text;

  // Search a copy without whitespace, mapping each kept character back to its place in the text.
  let compact = "";
  const positions: number[] = [];
  for (let index = 0; index < text.length; index++) {
    if (!/\s/.test(text[index] ?? "")) {
      compact += text[index];
      positions.push(index);
    }
  }

  const spans: [number, number][] = [];
  for (const needle of needles) {
    for (let found = compact.indexOf(needle); found >= 0; found = compact.indexOf(needle, found + 1)) {
      let start = positions[found] ?? 0;
      let end = (positions[found + needle.length - 1] ?? start) + 1;
      while (start > 0 && TOKEN_CHARACTER.test(text[start - 1] ?? "")) start--;
      while (end < text.length && TOKEN_CHARACTER.test(text[end] ?? "")) end++;
      spans.push([start, end]);
    }
  }
  if (spans.length === 0) return text;

  spans.sort((left, right) => left[0] - right[0]);
  let result = "";
  let cursor = 0;
  for (const [start, end] of spans) {
    if (end <= cursor) continue;
    result += text.slice(cursor, Math.max(cursor, start)) + REDACTED;
    cursor = end;
  }
  return result + text.slice(cursor);
}

/** The secret as the text might spell it. Whitespace is left out: the search ignores whitespace anyway. */
export function secretVariants(secret: string): string[] {
  const plain = secret.replace(/\s/g, "");
  if (plain === "") return [];
  const variants = new Set([plain, encodeURIComponent(secret), JSON.stringify(secret).slice(1, -1)]);
  const bytes = Buffer.from(secret, "utf8");
  for (const encoding of ["base64", "base64url"] as const) {
    for (let offset = 0; offset < 3; offset++) {
      // Inside a longer base64 string the secret starts at some byte offset; only the characters that depend on
      // nothing but the secret's own bits are the same whatever surrounds it.
      const encoded = Buffer.concat([Buffer.alloc(offset), bytes]).toString(encoding).replace(/=+$/, "");
      const core = encoded.slice(Math.ceil((offset * 4) / 3), Math.floor(((offset + bytes.length) * 4) / 3));
      if (core.length >= 12) variants.add(core);
    }
  }
  return [...variants].map((variant) => variant.replace(/\s/g, "")).filter((variant) => variant !== "");
}

// ---------------------------------------------------------------------------------------------------------------
// Patterns

/** A URL of any scheme, up to whitespace or a quote/bracket that ends it in prose or markup. */
const URL_PATTERN = /\b([A-Za-z][A-Za-z0-9+.-]{0,30}):\/\/([^\s/?#"'<>`]*)[^\s"'<>`]*/g;

function hostOf(authority: string): string {
  return authority.slice(authority.lastIndexOf("@") + 1).replace(/[^A-Za-z0-9.:[\]_-]/g, "");
}

const TOKEN_PATTERNS: RegExp[] = [
  /\beyJ[A-Za-z0-9_-]{5,}(?:\.[A-Za-z0-9_-]*){1,4}/g, // JWT / JWS / JWE: base64url of `{"` then dotted parts
  /\bgh[pousr]_[A-Za-z0-9]{20,}/g,
  /\bgithub_pat_[A-Za-z0-9_]{20,}/g,
  /\bsk-[A-Za-z0-9_-]{16,}/g,
  /\bxox[abposr]-[A-Za-z0-9-]{10,}/g,
  /\bAIza[0-9A-Za-z_-]{30,}/g,
  /\bglpat-[A-Za-z0-9_-]{20,}/g,
  /\bnpm_[A-Za-z0-9]{30,}/g,
  /\b(?:A3T[A-Z0-9]|AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA)[A-Z0-9]{16}\b/g,
];

const AUTHORIZATION_SCHEME = /\b(Bearer|Basic)(\s+)([A-Za-z0-9._~+/=-]+)/gi;

/** A credential, not a word: long enough and mixing character kinds the way tokens do. */
function looksLikeCredential(value: string): boolean {
  return value.length >= 8 && (characterClasses(value) >= 2 || /[._~+/=-]/.test(value));
}

/**
 * `name=value`, `name: value`, `"name": "value"`, `Authorization: Bearer value`. The name starts at a word boundary and may carry a short prefix
 * (`access_token`, `X-Amz-Security-Token`, `client_secret`); the lazy bounded prefix keeps backtracking constant.
 */
const NAMED_VALUE =
  /(?<![A-Za-z0-9])([A-Za-z0-9_.-]{0,30}?(?:token|secret|password|passwd|pwd|api[_-]?key|access[_-]?key|private[_-]?key|authorization|credential|signature|session[_-]?id|cookie)s?)(["']?\s*[=:]\s*(?:(?:Bearer|Basic)\s+)?)(?:"(?:[^"\\]|\\.)*"?|'[^']*'?|[^\s&,;"'<>]+)/gi;

const LONG_RUN = /[A-Za-z0-9+/=_-]{32,}/g;

function isHighEntropy(run: string): boolean {
  if (characterClasses(run) < 2) return false;
  const counts = new Map<string, number>();
  for (const character of run) counts.set(character, (counts.get(character) ?? 0) + 1);
  let bits = 0;
  for (const count of counts.values()) {
    const share = count / run.length;
    bits -= share * Math.log2(share);
  }
  return bits >= 3;
}

function characterClasses(value: string): number {
  return Number(/[a-z]/.test(value)) + Number(/[A-Z]/.test(value)) + Number(/[0-9]/.test(value));
}

/** At most `limit` code points (a surrogate pair is never cut), the last one an ellipsis when anything was dropped. */
function truncate(text: string, limit: number): string {
  const codePoints = Array.from(text);
  if (codePoints.length <= limit) return text;
  return `${codePoints.slice(0, limit - 1).join("").trimEnd()}…`;
}

