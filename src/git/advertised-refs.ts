import { lineText, PktLineReader } from "./pkt-line.js";

/** A smart-HTTP ref advertisement Axon cannot read. */
export class AdvertisementError extends Error {
  override readonly name = "AdvertisementError";
}

/**
 * The refs of a smart-HTTP advertisement (`info/refs?service=git-receive-pack`, gitprotocol-http): a
 * `# service=...` line and a flush, then `<id> <ref>` lines (the first with capabilities after a NUL) up to a
 * flush. An empty repository advertises only `capabilities^{}`, which is no ref.
 */
export function advertisedRefs(body: Buffer): Map<string, string> {
  const lines = new PktLineReader();
  lines.push(body);
  const refs = new Map<string, string>();
  let flushes = 0;
  for (let line = lines.next(); line !== undefined; line = lines.next()) {
    if (line.kind === "flush") {
      if (++flushes === 2) return refs;
      continue;
    }
    if (line.kind !== "data") throw new AdvertisementError(`unexpected ${line.kind} packet`);
    const nul = line.payload.indexOf(0);
    const text = lineText(nul < 0 ? line.payload : line.payload.subarray(0, nul));
    if (text.startsWith("# service=") || text === "version 1") continue;
    const [id, ref] = text.split(" ");
    if (id === undefined || ref === undefined || !/^(?:[0-9a-f]{40}|[0-9a-f]{64})$/.test(id)) throw new AdvertisementError("a ref line is `<id> <ref>`");
    if (ref !== "capabilities^{}" && !ref.endsWith("^{}")) refs.set(ref, id);
  }
  throw new AdvertisementError("the advertisement ends before its flush");
}
