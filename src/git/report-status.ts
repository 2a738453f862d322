import { FLUSH, lineText, PktLineReader, pktLine, sidebandLines, type SidebandChannel } from "./pkt-line.js";

/** How a push's answer is framed: as the client asked on its first command. */
export interface PushAnswerFormat {
  /** The largest sideband packet, or undefined without sideband (then nothing but the report can be said). */
  sidebandPacket: number | undefined;
  reportStatus: boolean;
}

export function answerFormat(capabilities: readonly string[]): PushAnswerFormat {
  const sidebandPacket = capabilities.includes("side-band-64k") ? 65520 : capabilities.includes("side-band") ? 1000 : undefined;
  return { sidebandPacket, reportStatus: capabilities.includes("report-status") || capabilities.includes("report-status-v2") };
}

/**
 * A report-status answer (gitprotocol-pack) refusing every ref of the push: `unpack ok` (the pack is not the
 * problem) and one `ng <ref> <reason>` each, which Git prints as `! [remote rejected] <ref> (<reason>)`.
 */
export function rejectionReport(format: PushAnswerFormat, refs: readonly { ref: string; reason: string }[]): Buffer {
  const report = Buffer.concat([pktLine("unpack ok\n"), ...refs.map(({ ref, reason }) => pktLine(`ng ${ref} ${oneLine(reason)}\n`)), FLUSH]);
  return format.sidebandPacket === undefined ? report : Buffer.concat([sidebandLines(1, report, format.sidebandPacket), FLUSH]);
}

/**
 * A line for the terminal (`remote: <text>`), or nothing without sideband. `quiet` does not silence it: like a hook's
 * message, it says what happens to the push, not how far its unpacking got.
 */
export function progressLine(format: PushAnswerFormat, text: string): Buffer {
  if (format.sidebandPacket === undefined) return Buffer.alloc(0);
  return sidebandLines(2, text, format.sidebandPacket);
}

/** A reason as Git will print it: one line of printable text, not too long for a terminal. */
function oneLine(text: string): string {
  const line = text.replace(/[\u0000-\u001f\u007f]+/g, " ").trim();
  return line.length > 300 ? `${line.slice(0, 297)}...` : line;
}

/** What the upstream reported of a push. */
export interface PushReport {
  /** The report was read to its flush. */
  complete: boolean;
  unpackOk: boolean;
  refs: { ref: string; ok: boolean; reason?: string }[];
  /** The upstream's fatal error on sideband channel 3, if any. */
  fatal?: string;
}

/**
 * Reads the upstream's report-status out of its answer as the answer streams to the client: the sideband's data
 * channel (or the bare pkt-lines without sideband) carries the report; progress is left alone.
 */
export class PushReportReader {
  private readonly outer = new PktLineReader();
  private readonly inner = new PktLineReader();
  private readonly report: PushReport = { complete: false, unpackOk: false, refs: [] };
  private broken = false;

  constructor(private readonly sideband: boolean) {}

  push(bytes: Uint8Array): void {
    if (this.broken || this.report.complete) return;
    try {
      if (!this.sideband) return this.readReport(bytes);
      this.outer.push(bytes);
      for (let line = this.outer.next(); line !== undefined && !this.report.complete; line = this.outer.next()) {
        if (line.kind !== "data" || line.payload.length === 0) continue;
        const channel = line.payload[0] as SidebandChannel;
        if (channel === 1) this.readReport(line.payload.subarray(1));
        else if (channel === 3) this.report.fatal = lineText(line.payload.subarray(1)).slice(0, 500);
      }
    } catch {
      this.broken = true; // not a report this reader understands: the push is not known to have landed
    }
  }

  result(): PushReport {
    return this.report;
  }

  private readReport(bytes: Uint8Array): void {
    this.inner.push(bytes);
    for (let line = this.inner.next(); line !== undefined; line = this.inner.next()) {
      if (line.kind === "flush") {
        this.report.complete = true;
        return;
      }
      if (line.kind !== "data") continue;
      const text = lineText(line.payload);
      if (text.startsWith("unpack ")) this.report.unpackOk = text === "unpack ok";
      else if (text.startsWith("ok ")) this.report.refs.push({ ref: text.slice(3), ok: true });
      else if (text.startsWith("ng ")) {
        const [ref = "", ...reason] = text.slice(3).split(" ");
        this.report.refs.push({ ref, ok: false, reason: reason.join(" ") });
      }
      // `option ...` lines (report-status-v2) say how a ref was updated: nothing to decide on.
    }
  }
}
