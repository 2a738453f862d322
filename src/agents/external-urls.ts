import { networkNameProblem } from "./manifest.js";

/** The port of neuro-san's HTTP API, where an `http://` reference without a port goes. */
const NEURO_SAN_HTTP_PORT = "8080";

/** Where an http(s) reference to another network leads. */
export type UrlReference =
  /** `http(s)://localhost/name` without a port: this server's own network, called as `/name` is. */
  | { kind: "same_server"; network: string }
  /** `origin` has its port written out: the URL's own, else neuro-san's default for the scheme. */
  | { kind: "other_server"; origin: string; network: string };

/**
 * An http(s) reference to a network, read as neuro-san reads it: the whole path is the network's name
 * (`https://agents.example.com/deep/math_guy` calls `deep/math_guy`); without a port, `https://` goes to 443 (a
 * TLS-terminating proxy in front) and `http://` to neuro-san's 8080, except `localhost`, which is this very server.
 * Undefined when it is no such reference: not http(s), or no usable network name in its path.
 */
export function urlReferenceOf(reference: string): UrlReference | undefined {
  let url: URL;
  try {
    url = new URL(reference);
  } catch {
    return undefined;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return undefined;
  let network: string;
  try {
    network = url.pathname.split("/").filter(Boolean).map(decodeURIComponent).join("/");
  } catch {
    return undefined;
  }
  if (networkNameProblem(network) !== undefined) return undefined;
  const schemePort = url.protocol === "https:" ? "443" : "80";
  // WHATWG URLs drop a port equal to the scheme's (`http://h:80/x` has port "" as `http://h/x` has): look at the text.
  const written = url.port !== "" ? url.port : writesPort(reference) ? schemePort : undefined;
  if (written === undefined && url.hostname === "localhost") return { kind: "same_server", network };
  const port = written ?? (url.protocol === "https:" ? schemePort : NEURO_SAN_HTTP_PORT);
  return { kind: "other_server", origin: `${url.protocol}//${url.hostname}:${port}`, network };
}

/** Whether the reference's authority ends in `:<port>`. */
function writesPort(reference: string): boolean {
  const authority = reference.replace(/^[a-z]+:\/\//i, "").split(/[/?#]/)[0] ?? "";
  return /:\d+$/.test(authority.slice(authority.lastIndexOf("@") + 1));
}

/** Where neuro-san's HTTP API of a network on another server takes a StreamingChat turn. */
export function streamingChatEndpoint(reference: { origin: string; network: string }): string {
  return `${reference.origin}/api/v1/${encodeURIComponent(reference.network)}/streaming_chat`;
}
