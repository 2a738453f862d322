import type { TLSSocket } from "node:tls";

// A symbol on the socket itself: HTTP/2 hands out a new proxy of it on every access, which forwards property reads.
const certificateNamesKey = Symbol("axon.client-certificate-names");

/**
 * On an mTLS connection (the handshake already verified the chain against AXON_TLS_CLIENT_CA_FILE), the names the
 * certificate gives its holder: the subject CN, then its SAN DNS names. Read once per connection, kept on it.
 */
export function rememberCertificateNames(socket: TLSSocket): void {
  if (!socket.authorized) return;
  const certificate = socket.getPeerCertificate();
  const commonName = certificate.subject?.CN;
  const dnsNames = (certificate.subjectaltname ?? "")
    .split(", ")
    .filter((entry) => entry.startsWith("DNS:"))
    .map((entry) => entry.slice(4));
  const names = [...(Array.isArray(commonName) ? commonName : commonName ? [commonName] : []), ...dnsNames];
  if (names.length > 0) (socket as unknown as Record<symbol, readonly string[]>)[certificateNamesKey] = names;
}

export function certificateNamesOf(socket: unknown): readonly string[] | undefined {
  if (typeof socket !== "object" || socket === null) return undefined;
  return (socket as Record<symbol, readonly string[] | undefined>)[certificateNamesKey];
}
