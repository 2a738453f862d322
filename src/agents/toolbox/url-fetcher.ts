import type { JsonObject } from "@bufbuild/protobuf";
import type { LibraryTool } from "./library-tool.js";

const DEFAULT_MAX_BYTES = 1_000_000;
const DEFAULT_TIMEOUT_SECONDS = 30;
const MAX_REDIRECTS = 5;

/**
 * GET a URL and answer its text: Axon's version of neuro-san's `requests_get`. Only URLs under one of the
 * `allowed_urls` prefixes (same scheme, host and port; the path at or below the prefix's) are fetched, redirects
 * included, so an LLM talked into it cannot reach the cloud metadata service or an internal host. No `allowed_urls`:
 * nothing is fetched.
 */
export const urlFetcher: LibraryTool = {
  description: "Fetches a URL with HTTP GET and returns the text of the response. Only URLs the operator allowed can be fetched.",
  parameters: {
    type: "object",
    properties: { url: { type: "string", description: "The absolute http(s) URL to fetch." } },
    required: ["url"],
  },

  async invoke(input: JsonObject, settings: JsonObject, signal: AbortSignal): Promise<string> {
    const allowed = stringList(settings["allowed_urls"]).flatMap((prefix) => parseUrl(prefix) ?? []);
    const maxBytes = positiveNumber(settings["max_bytes"]) ?? DEFAULT_MAX_BYTES;
    const timeoutSeconds = positiveNumber(settings["timeout_seconds"]) ?? DEFAULT_TIMEOUT_SECONDS;
    const requested = typeof input["url"] === "string" ? input["url"] : "";
    const deadline = AbortSignal.any([signal, AbortSignal.timeout(timeoutSeconds * 1000)]);

    let url = parseUrl(requested.trim());
    for (let redirects = 0; ; redirects++) {
      if (url === undefined) throw new Error(`not an absolute http(s) URL: ${requested}`);
      if (!isAllowed(url, allowed)) throw new Error(`${url.href} is not under the allowed URLs of this tool`);
      const response = await fetch(url, { redirect: "manual", signal: deadline });
      const location = response.headers.get("location");
      if (response.status >= 300 && response.status < 400 && location !== null) {
        await response.body?.cancel();
        if (redirects >= MAX_REDIRECTS) throw new Error(`more than ${MAX_REDIRECTS} redirects`);
        url = parseUrl(location, url);
        continue;
      }
      const text = await readText(response, maxBytes);
      if (!response.ok) throw new Error(`${url.href} answered HTTP ${response.status}`);
      return text;
    }
  },
};

function isAllowed(url: URL, allowed: URL[]): boolean {
  return allowed.some((prefix) => {
    if (prefix.origin !== url.origin) return false;
    const base = prefix.pathname.endsWith("/") ? prefix.pathname : `${prefix.pathname}/`;
    return url.pathname === prefix.pathname || url.pathname.startsWith(base);
  });
}

/** http(s) only, and never credentials in the URL (they would reach logs and the LLM). */
function parseUrl(text: string, base?: URL): URL | undefined {
  try {
    const url = new URL(text, base);
    return (url.protocol === "http:" || url.protocol === "https:") && url.username === "" && url.password === "" ? url : undefined;
  } catch {
    return undefined;
  }
}

async function readText(response: Response, maxBytes: number): Promise<string> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  let truncated = false;
  for await (const chunk of response.body ?? []) {
    const bytes = chunk as Uint8Array;
    if (size + bytes.length > maxBytes) {
      chunks.push(bytes.subarray(0, maxBytes - size));
      truncated = true;
      break;
    }
    chunks.push(bytes);
    size += bytes.length;
  }
  const text = Buffer.concat(chunks).toString("utf8");
  return truncated ? `${text}\n[truncated after ${maxBytes} bytes]` : text;
}

function stringList(value: unknown): string[] {
  if (typeof value === "string") return [value];
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === "string") : [];
}

function positiveNumber(value: unknown): number | undefined {
  return typeof value === "number" && value > 0 ? value : undefined;
}
