import { describe, expect, it } from "vitest";

import { REDACTED, SANITIZED_MAX_LENGTH, sanitizeProviderError, sanitizeProviderText } from "../../src/operations/sanitize.js";

const secret = "s3cr3t-Value_abcdefghijklmnopqrstuvwxyz0123";
const options = { secrets: [secret] };

function clean(text: string): string {
  return sanitizeProviderText(text, options);
}

describe("the configured secret", () => {
  it("is redacted wherever it appears", () => {
    expect(clean(`token ${secret} was rejected; ${secret}`)).toBe(`token ${REDACTED} was rejected; ${REDACTED}`);
  });

  it("is redacted when embedded in a longer token", () => {
    expect(clean(`key=xx${secret}yy.`)).not.toContain("abcdefghijklmnop");
  });

  it("is redacted when split by a line break, tabs or spaces", () => {
    for (const split of [`${secret.slice(0, 10)}\n${secret.slice(10)}`, `${secret.slice(0, 3)}\t \t${secret.slice(3)}`]) {
      const result = clean(`got ${split} end`);
      expect(result).toBe(`got ${REDACTED} end`);
    }
  });

  it("is redacted when split by invisible or control characters", () => {
    for (const splitter of ["\u200B", "\u0000", "\u202E", "\uFEFF", "\u001b", "\u2028"]) {
      expect(clean(`got ${secret.slice(0, 7)}${splitter}${secret.slice(7)} end`)).toBe(`got ${REDACTED} end`);
    }
  });

  it("is redacted percent-encoded and JSON-escaped", () => {
    const awkward = 'p@ss/word+"quoted"&more-than-32-bytes-long!';
    const result = sanitizeProviderText(`a ${encodeURIComponent(awkward)} b ${JSON.stringify(awkward)} c`, { secrets: [awkward] });
    expect(result).not.toContain("quoted");
    expect(result).not.toContain("more-than-32");
  });

  it("is redacted base64 encoded, at any byte alignment, and base64url encoded", () => {
    for (const prefix of ["", "u:", "ab:"]) {
      const encoded = Buffer.from(`${prefix}${secret}`).toString("base64");
      expect(clean(`Authorization header ${encoded} refused`)).toBe(`Authorization header ${REDACTED} refused`);
    }
    const binaryish = "\u00ff\u00fe>>>???~~~" + "k".repeat(30);
    const url = Buffer.from(binaryish).toString("base64url");
    expect(sanitizeProviderText(`x ${url} y`, { secrets: [binaryish] })).toBe(`x ${REDACTED} y`);
  });

  it("is redacted inside a base64 block wrapped over several lines", () => {
    const encoded = Buffer.from(`user:${secret}`).toString("base64");
    const wrapped = `${encoded.slice(0, 20)}\r\n${encoded.slice(20, 40)}\r\n${encoded.slice(40)}`;
    expect(clean(`blob ${wrapped} end`)).toBe(`blob ${REDACTED} end`);
  });

  it("works for secrets holding regular expression characters", () => {
    const regexy = "(a+)+$^.*[x]{2}|\\d-and-32-bytes-of-padding";
    expect(sanitizeProviderText(`echo ${regexy} done`, { secrets: [regexy] })).toBe(`echo ${REDACTED} done`);
  });

  it("empty and whitespace-only secrets redact nothing", () => {
    expect(sanitizeProviderText("plain words stay", { secrets: ["", "  "] })).toBe("plain words stay");
  });

  it("is hidden when it appears in a nested JSON error", () => {
    const body = JSON.stringify({ error: { message: JSON.stringify({ inner: { auth: `Bearer ${secret}`, note: secret } }) } });
    const result = sanitizeProviderError(body, options);
    expect(result).not.toContain(secret);
    expect(result).not.toContain("abcdefghij");
  });
});

describe("credential-like values", () => {
  it("Bearer tokens, whatever the scheme's case", () => {
    expect(clean("sent Authorization: Bearer abc.DEF-123_x~+/= then")).toBe(`sent Authorization: Bearer ${REDACTED} then`);
    expect(clean("bearer Zm9vYmFyYmF6cXV4")).toBe(`bearer ${REDACTED}`);
  });

  it("Basic credentials", () => {
    expect(clean("Basic dXNlcjpwYXNzd29yZA==")).toBe(`Basic ${REDACTED}`);
  });

  it("but not plain words after Bearer", () => {
    expect(clean("Bearer token missing")).toBe("Bearer token missing");
  });

  it("GitHub tokens", () => {
    for (const token of [`ghp_${"A1b2C3".repeat(6)}`, `gho_${"x9".repeat(18)}`, `ghs_${"Q".repeat(36)}`, `github_pat_11ABCDEFG0_${"z".repeat(59)}`]) {
      expect(clean(`bad credentials ${token} here`)).toBe(`bad credentials ${REDACTED} here`);
    }
  });

  it("other vendors' well-known token shapes", () => {
    for (const token of [
      "sk-ant-api03-abcdefghijklmnopqrstuv",
      "sk-proj-ABCDEFGHIJKLMNOP",
      "xoxb-1234567890-abcdefghij",
      `AIza${"S".repeat(35)}`,
      "glpat-abcdefghijklmnopqrstu",
      `npm_${"a".repeat(36)}`,
    ]) {
      expect(clean(`key ${token} invalid`)).toBe(`key ${REDACTED} invalid`);
    }
  });

  it("JWTs", () => {
    const jwt = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0In0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c";
    expect(clean(`expired jwt ${jwt}.`)).toBe(`expired jwt ${REDACTED}`);
    expect(clean("short eyJhbGciOi.e30.")).toBe(`short ${REDACTED}`);
  });

  it("AWS access key ids and secret keys", () => {
    expect(clean("id AKIAIOSFODNN7EXAMPLE secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY ok")).toBe(`id ${REDACTED} secret ${REDACTED} ok`);
  });

  it("token=, api_key=, password= and similar parameter forms", () => {
    expect(clean("token=abc123&api_key=zzz&other=fine")).toBe(`token=${REDACTED}&api_key=${REDACTED}&other=fine`);
    expect(clean("access_token=a1 refresh_token=b2 client_secret=c3 apikey=d4 X-Api-Key=e5")).toBe(
      `access_token=${REDACTED} refresh_token=${REDACTED} client_secret=${REDACTED} apikey=${REDACTED} X-Api-Key=${REDACTED}`,
    );
    expect(clean("password=hunter2; passwd = x; pwd:y")).toBe(`password=${REDACTED}; passwd = ${REDACTED}; pwd:${REDACTED}`);
    expect(clean("X-Amz-Security-Token: FQoGZXIvYXdz session_id=42")).toBe(`X-Amz-Security-Token: ${REDACTED} session_id=${REDACTED}`);
  });

  it("quoted JSON forms, values with spaces included", () => {
    expect(clean('{"password": "hunter two", "api_key":"k", "user":"bob"}')).toBe(`{"password": ${REDACTED}, "api_key":${REDACTED}, "user":"bob"}`);
    expect(clean("secret='a b c' end")).toBe(`secret=${REDACTED} end`);
  });

  it("PEM private keys, even cut off", () => {
    const pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\nabc\n-----END RSA PRIVATE KEY-----";
    expect(clean(`loaded ${pem} done`)).toBe(`loaded ${REDACTED} done`);
    expect(clean("-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg")).toBe(REDACTED);
  });

  it("long high-entropy runs of 32 characters or more", () => {
    const hex = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
    const base64 = "q83vEjRWeJCrze8SNFZ4kKvN7xI0VniQ";
    expect(clean(`digest ${hex} and ${base64}`)).toBe(`digest ${REDACTED} and ${REDACTED}`);
  });

  it("but not runs shorter than 32, repetitive runs, single-case words or plain numbers", () => {
    const kept = [
      "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d", // 31
      "Aa".repeat(20),
      "-".repeat(40),
      "pneumonoultramicroscopicsilicovolcanoconiosis",
      "12345678901234567890123456789012345",
    ];
    for (const text of kept) expect(clean(`x ${text} y`)).toBe(`x ${text} y`);
  });
});

describe("URLs", () => {
  it("are reduced to scheme and host (port kept): no path, query, fragment or userinfo", () => {
    expect(clean("calling https://user:pa55@api.example.com:8443/v1/items?token=abc#frag failed")).toBe("calling https://api.example.com:8443 failed");
    expect(clean("see http://example.com/docs.")).toBe("see http://example.com");
  });

  it("of any scheme, connection strings included", () => {
    expect(clean("cannot reach postgres://admin:hunter2@db.internal:5432/app?sslmode=disable")).toBe("cannot reach postgres://db.internal:5432");
    expect(clean("wss://stream.example.com/socket?sig=abc")).toBe("wss://stream.example.com");
  });

  it("in quotes and markup end at the quote", () => {
    expect(clean(`redirect to "https://a.example.com/x?y=1" or <https://b.example.com/p>`)).toBe(`redirect to "https://a.example.com" or <https://b.example.com>`);
  });

  it("with an IPv6 host keep the host", () => {
    expect(clean("http://[::1]:8080/path")).toBe("http://[::1]:8080");
  });
});

describe("control characters and whitespace", () => {
  it("line breaks, tabs and runs of spaces collapse to single spaces, trimmed", () => {
    expect(clean("  first line\r\n\tsecond   line\n\n")).toBe("first line second line");
  });

  it("terminal escape sequences are removed whole", () => {
    expect(clean("\u001b[31mred\u001b[0m and \u001b]0;title\u0007text \u009b2Jcleared")).toBe("red and text cleared");
  });

  it("NUL, DEL, C1 controls, bidi overrides, zero-width characters and lone surrogates are removed", () => {
    expect(clean("a\u0000b\u007fc\u0085d \u202Eevil\u202C \u200Bzw\uFEFF x\uD800y")).toBe("a b c d evil zw xy");
  });

  it("unicode text survives", () => {
    expect(clean("Zugriff verweigert ✓ — 拒绝访问 🙂")).toBe("Zugriff verweigert ✓ — 拒绝访问 🙂");
  });
});

describe("length", () => {
  it(`is at most ${SANITIZED_MAX_LENGTH} characters, ending in an ellipsis when cut`, () => {
    const result = clean("word ".repeat(400));
    expect(Array.from(result)).toHaveLength(SANITIZED_MAX_LENGTH);
    expect(result.endsWith("…")).toBe(true);
  });

  it("never splits a surrogate pair", () => {
    const result = clean("🙂".repeat(600));
    expect(Array.from(result)).toHaveLength(SANITIZED_MAX_LENGTH);
    expect(result).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
  });

  it("is measured after redaction, so a long secret does not push out the message", () => {
    const longSecret = "L0ng".repeat(200);
    expect(sanitizeProviderText(`denied ${longSecret} because`, { secrets: [longSecret] })).toBe(`denied ${REDACTED} because`);
  });

  it("a huge body finishes quickly and still redacts what is shown", () => {
    const huge = `${" ".repeat(200_000)}${secret} ${"x=y ".repeat(100_000)}`;
    const started = performance.now();
    const result = clean(huge);
    expect(performance.now() - started).toBeLessThan(2000);
    expect(result.startsWith(REDACTED)).toBe(true);
    expect(result.length).toBeLessThanOrEqual(SANITIZED_MAX_LENGTH);
  });

  it("hostile patterns do not backtrack", () => {
    const inputs = ["a_".repeat(30_000) + "token", "token=" + '"\\'.repeat(20_000), "eyJ" + "a".repeat(60_000), "https://" + "@".repeat(60_000)];
    const started = performance.now();
    for (const input of inputs) clean(input);
    expect(performance.now() - started).toBeLessThan(3000);
  });
});

describe("provider error bodies", () => {
  it("keep only the documented message field of a JSON body", () => {
    expect(sanitizeProviderError('{"error":{"message":"Not Found","code":404,"trace":"secret stuff"}}')).toBe("Not Found");
    expect(sanitizeProviderError('{"message":"Bad credentials","documentation_url":"https://docs.github.com/rest"}')).toBe("Bad credentials");
    expect(sanitizeProviderError('{"error":"invalid_grant","error_description":"Token expired"}')).toBe("Token expired");
    expect(sanitizeProviderError('{"detail":"Not authenticated"}')).toBe("Not authenticated");
    expect(sanitizeProviderError('{"error":"rate_limited"}')).toBe("rate_limited");
    expect(sanitizeProviderError('{"errors":[{"message":"first"},{"message":"second"}]}')).toBe("first");
  });

  it("prefer error.message over message over error_description over detail", () => {
    expect(sanitizeProviderError({ detail: "d", error_description: "e", message: "m", error: { message: "em" } })).toBe("em");
    expect(sanitizeProviderError({ detail: "d", error_description: "e", message: "m" })).toBe("m");
    expect(sanitizeProviderError({ detail: "d", error_description: "e" })).toBe("e");
  });

  it("a JSON body without a documented field yields nothing", () => {
    expect(sanitizeProviderError('{"stack":"at foo (/srv/app.js:1)","env":{"TOKEN":"x"}}')).toBe("");
    expect(sanitizeProviderError({ detail: [{ msg: "x" }] })).toBe("");
    expect(sanitizeProviderError("[]")).toBe("");
  });

  it("parsed JSON, bytes and arrays are read like text", () => {
    expect(sanitizeProviderError({ message: "parsed" })).toBe("parsed");
    expect(sanitizeProviderError(new TextEncoder().encode('{"message":"bytes"}'))).toBe("bytes");
    expect(sanitizeProviderError(Buffer.from("plain bytes\n"))).toBe("plain bytes");
    expect(sanitizeProviderError('[{"message":"in a list"}]')).toBe("in a list");
  });

  it("an HTML page yields its title or nothing", () => {
    expect(sanitizeProviderError("<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>")).toBe("502 Bad Gateway");
    expect(sanitizeProviderError("<html><body><script>alert(1)</script></body></html>")).toBe("");
  });

  it("plain text, and text that only looks like JSON, are kept as text", () => {
    expect(sanitizeProviderError("Service Unavailable")).toBe("Service Unavailable");
    expect(sanitizeProviderError("{not json")).toBe("{not json");
  });

  it("nothing usable yields nothing", () => {
    for (const body of [undefined, null, 42, true, "", "   "]) expect(sanitizeProviderError(body)).toBe("");
  });

  it("the chosen message is sanitized like any text", () => {
    const body = JSON.stringify({ error: { message: `bad key ${secret}\nat https://api.example.com/v1?key=1` } });
    expect(sanitizeProviderError(body, options)).toBe(`bad key ${REDACTED} at https://api.example.com`);
  });
});
