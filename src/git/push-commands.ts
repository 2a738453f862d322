import { lineText, PktLineReader } from "./pkt-line.js";

/** One ref update of a push: `old` all zeros creates the ref, `new` all zeros deletes it. */
export interface RefUpdate {
  ref: string;
  oldId: string;
  newId: string;
}

/** What a receive-pack request asks before its pack (gitprotocol-pack, "Reference Update Request"). */
export interface PushCommands {
  updates: RefUpdate[];
  /** The capabilities the client asked for on its first command (report-status, side-band-64k, atomic, ...). */
  capabilities: string[];
  pushOptions: string[];
  /** The object id length in hex digits: 40 (SHA-1) or 64 (SHA-256). */
  idLength: 40 | 64;
}

/** A request Axon cannot read as a push; Git's client is told why. */
export class PushCommandsError extends Error {
  override readonly name = "PushCommandsError";
}

/** More updates than this in one push is no ordinary use of Git and is refused before anything is decided. */
export const MAX_REF_UPDATES = 2000;

const ID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

export function isZeroId(id: string): boolean {
  return /^0+$/.test(id);
}

/**
 * Reads the commands at the head of a receive-pack request body as its bytes arrive: `push` returns the commands once
 * their closing flush (and the push options, when asked for) are in, with the bytes that follow them (the start of the
 * pack); until then undefined. A request of no commands at all (Git's `0000` probe) has `updates` empty.
 */
export class PushCommandsReader {
  private readonly lines = new PktLineReader();
  private readonly updates: RefUpdate[] = [];
  private capabilities: string[] = [];
  private readonly pushOptions: string[] = [];
  private section: "commands" | "options" | "done" = "commands";

  push(bytes: Uint8Array): { commands: PushCommands; rest: Buffer } | undefined {
    if (this.section === "done") throw new Error("the commands were already read");
    this.lines.push(bytes);
    for (let line = this.lines.next(); line !== undefined; line = this.lines.next()) {
      if (line.kind !== "data") {
        if (line.kind !== "flush") throw new PushCommandsError(`unexpected ${line.kind} packet in the push commands`);
        if (this.section === "commands" && this.updates.length > 0 && this.capabilities.includes("push-options")) {
          this.section = "options";
          continue;
        }
        this.section = "done";
        return { commands: this.commands(), rest: this.lines.rest() };
      }
      if (this.section === "options") this.pushOptions.push(lineText(line.payload));
      else this.command(line.payload);
    }
    return undefined;
  }

  private command(payload: Buffer): void {
    const nul = payload.indexOf(0);
    const text = lineText(nul < 0 ? payload : payload.subarray(0, nul));
    if (this.updates.length === 0) {
      if (text.startsWith("push-cert")) throw new PushCommandsError("signed pushes (push certificates) are not supported through Axon");
      this.capabilities = nul < 0 ? [] : lineText(payload.subarray(nul + 1)).split(" ").filter((word) => word !== "");
    }
    if (text.startsWith("shallow ")) return; // the client's shallow boundary: nothing to decide on
    const [oldId, newId, ref, extra] = text.split(" ");
    if (oldId === undefined || newId === undefined || ref === undefined || extra !== undefined || !ID.test(oldId) || !ID.test(newId) || oldId.length !== newId.length) {
      throw new PushCommandsError("a push command is `<old-id> <new-id> <ref>`");
    }
    if (this.updates.length > 0 && oldId.length !== this.updates[0]!.oldId.length) throw new PushCommandsError("a push mixes object id lengths");
    if (!isValidRefName(ref)) throw new PushCommandsError(`not a valid ref name: ${JSON.stringify(ref.slice(0, 200))}`);
    if (isZeroId(oldId) && isZeroId(newId)) throw new PushCommandsError(`${ref}: an update from nothing to nothing`);
    if (this.updates.some((update) => update.ref === ref)) throw new PushCommandsError(`${ref} is updated twice in one push`);
    if (this.updates.length >= MAX_REF_UPDATES) throw new PushCommandsError(`a push through Axon updates at most ${MAX_REF_UPDATES} refs`);
    this.updates.push({ ref, oldId, newId });
  }

  private commands(): PushCommands {
    const idLength = (this.updates[0]?.oldId.length ?? 40) as 40 | 64;
    return { updates: this.updates, capabilities: this.capabilities, pushOptions: this.pushOptions, idLength };
  }
}

/**
 * The parts of git-check-ref-format that keep a ref name unambiguous in policy globs and on a terminal: under
 * `refs/`, no control characters, spaces or `~^:?*[\`, no `..`, `@{`, `//`, no component starting with `.` or ending
 * in `.lock`, and not ending in `/` or `.`.
 */
export function isValidRefName(ref: string): boolean {
  if (!ref.startsWith("refs/") || ref.length > 1024) return false;
  if (/[\u0000-\u0020\u007f~^:?*[\\]/.test(ref) || ref.includes("..") || ref.includes("@{") || ref.includes("//")) return false;
  if (ref.endsWith("/") || ref.endsWith(".")) return false;
  return ref.split("/").every((component) => component !== "" && !component.startsWith(".") && !component.endsWith(".lock"));
}
