import { mergeNonProtocolHeaders } from "@connectrpc/connect/protocol";

/**
 * What an implementation (or an error, e.g. Retry-After) asked to send, without the headers the protocols own
 * (content type, grpc-status, ...): ready to merge into a response of any protocol.
 */
export function visibleHeaders(target: Record<string, string>, ...sources: (Headers | undefined)[]): Record<string, string> {
  for (const source of sources) {
    if (source === undefined) continue;
    const visible = new Headers();
    mergeNonProtocolHeaders(visible, source);
    visible.forEach((value, name) => {
      target[name] = value;
    });
  }
  return target;
}
