import { createHash } from "node:crypto";
import zlib from "node:zlib";
import { applyDelta, DeltaError } from "./git-delta.js";

/** A commit found in a pack: its id (the hash of its content) and its parents, in order. */
export interface PackCommit {
  id: string;
  parents: string[];
}

export interface PackCommitsOptions {
  /** The repository's object format: `sha1` (40 hex digits) or `sha256` (64). */
  hash: "sha1" | "sha256";
  onCommit(commit: PackCommit): void;
  /** Commit bytes kept as the bases of later deltas, at most; past it a delta on a commit is left unresolved. */
  maxKeptBytes?: number;
}

// Object types of gitformat-pack.
const COMMIT = 1;
const OFS_DELTA = 6;
const REF_DELTA = 7;
const KNOWN_TYPES = new Set([1, 2, 3, 4, OFS_DELTA, REF_DELTA]);

/** Objects inflated at once from what has arrived; larger ones stream through an inflater. */
const SYNC_INFLATE_LIMIT = 256 * 1024;
/** A commit larger than this (its message, mostly) is not kept: it is read only to find where the next object starts. */
const MAX_COMMIT_BYTES = 4 * 1024 * 1024;

interface PackObject {
  offset: number;
  type: number;
  size: number;
  /** A delta's base: an earlier object's offset in this pack, or an object id. */
  baseOffset?: number;
  baseId?: string;
  /** The content is needed: a commit, or a delta on a kept commit (which is then a commit too). */
  keep: boolean;
}

/**
 * Finds the commits in a pack as its bytes arrive, without keeping the pack: every object is inflated (with
 * node:zlib) to find where the next one starts, and only commits, with the deltas whose base is an earlier commit
 * of the same pack, are rebuilt and hashed; trees and blobs go by as counted bytes. A delta on an object outside
 * the pack (a thin pack's) names a commit this reader cannot see, so proofs built from it only miss, never
 * invent, an ancestry. Anything malformed makes the rest of the pack unreadable (`unreadable`), never an error:
 * the upstream judges the pack, this reader only looks for proofs.
 */
export class PackCommitReader {
  private pending: Buffer = Buffer.alloc(0);
  /** The pack offset of `pending[0]`. */
  private position = 0;
  private phase: "header" | "object" | "data" | "trailer" | "done" | "unreadable" = "header";
  private objectsLeft = 0;
  private current: PackObject | undefined;
  private inflater: StreamingInflate | undefined;
  private readonly keptByOffset = new Map<number, Buffer>();
  private readonly keptById = new Map<string, Buffer>();
  private keptBytes = 0;
  private readonly idBytes: number;
  private readonly maxKeptBytes: number;

  constructor(private readonly options: PackCommitsOptions) {
    this.idBytes = options.hash === "sha1" ? 20 : 32;
    this.maxKeptBytes = options.maxKeptBytes ?? 64 * 1024 * 1024;
  }

  /** Whether the whole pack was read: every commit in it has been reported. */
  get complete(): boolean {
    return this.phase === "trailer" || this.phase === "done";
  }

  get unreadable(): boolean {
    return this.phase === "unreadable";
  }

  /** Reads `bytes`; resolves once they are consumed (an inflater may take them in the thread pool). */
  async write(bytes: Uint8Array): Promise<void> {
    if (this.phase === "done" || this.phase === "unreadable") return;
    const chunk = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    try {
      await this.consume();
    } catch (error) {
      if (!(error instanceof PackFormatError || error instanceof DeltaError || isZlibError(error))) throw error;
      this.giveUp();
    }
  }

  /** The pack has no more bytes. */
  end(): void {
    if (this.phase !== "trailer" && this.phase !== "done") this.giveUp();
    this.phase = this.phase === "trailer" ? "done" : this.phase;
    this.release();
  }

  private giveUp(): void {
    this.phase = "unreadable";
    this.inflater?.destroy();
    this.inflater = undefined;
    this.release();
  }

  private release(): void {
    this.pending = Buffer.alloc(0);
    this.keptByOffset.clear();
    this.keptById.clear();
  }

  private async consume(): Promise<void> {
    for (;;) {
      switch (this.phase) {
        case "header": {
          if (this.pending.length < 12) return;
          if (this.pending.toString("latin1", 0, 4) !== "PACK") throw new PackFormatError("not a pack");
          const version = this.pending.readUInt32BE(4);
          if (version !== 2 && version !== 3) throw new PackFormatError(`pack version ${version}`);
          this.objectsLeft = this.pending.readUInt32BE(8);
          this.advance(12);
          this.phase = this.objectsLeft === 0 ? "trailer" : "object";
          break;
        }
        case "object": {
          const object = this.objectHeader();
          if (object === undefined) return;
          this.current = object;
          this.phase = "data";
          break;
        }
        case "data": {
          const content = await this.inflate();
          if (content === undefined) return;
          this.finishObject(this.current!, content === true ? undefined : content);
          this.current = undefined;
          this.phase = --this.objectsLeft === 0 ? "trailer" : "object";
          break;
        }
        case "trailer":
        case "done":
        case "unreadable":
          // The checksum and anything after it are the upstream's to verify.
          this.pending = Buffer.alloc(0);
          return;
      }
    }
  }

  private advance(bytes: number): void {
    this.pending = this.pending.subarray(bytes);
    this.position += bytes;
  }

  /** The next object's header, or undefined until its bytes have arrived. */
  private objectHeader(): PackObject | undefined {
    const bytes = this.pending;
    let at = 0;
    if (bytes.length < 1) return undefined;
    let byte = bytes[at++]!;
    const type = (byte >> 4) & 7;
    let size = byte & 15;
    let shift = 16;
    while (byte & 0x80) {
      if (at >= bytes.length) return undefined;
      if (at > 10) throw new PackFormatError("an object size is too long");
      byte = bytes[at++]!;
      size += (byte & 0x7f) * shift;
      shift *= 128;
    }
    if (!KNOWN_TYPES.has(type)) throw new PackFormatError(`object type ${type}`);
    const object: PackObject = { offset: this.position, type, size, keep: type === COMMIT };
    if (type === OFS_DELTA) {
      // Big-endian base-128 with an offset of one added at every continuation (gitformat-pack).
      if (at >= bytes.length) return undefined;
      byte = bytes[at++]!;
      let distance = byte & 0x7f;
      while (byte & 0x80) {
        if (at >= bytes.length) return undefined;
        if (at > 12) throw new PackFormatError("a delta's base offset is too long");
        byte = bytes[at++]!;
        distance = (distance + 1) * 128 + (byte & 0x7f);
      }
      if (distance <= 0 || distance > object.offset) throw new PackFormatError("a delta's base lies outside the pack");
      object.baseOffset = object.offset - distance;
      object.keep = this.keptByOffset.has(object.baseOffset);
    } else if (type === REF_DELTA) {
      if (bytes.length < at + this.idBytes) return undefined;
      object.baseId = bytes.toString("hex", at, at + this.idBytes);
      at += this.idBytes;
      object.keep = this.keptById.has(object.baseId);
    }
    if (object.keep && size > MAX_COMMIT_BYTES) object.keep = false;
    this.advance(at);
    return object;
  }

  /**
   * The current object's inflated content (or true when it is not kept), once its compressed bytes are all in;
   * undefined while more are needed.
   */
  private async inflate(): Promise<Buffer | true | undefined> {
    const object = this.current!;
    if (this.inflater === undefined && object.size <= SYNC_INFLATE_LIMIT) {
      if (this.pending.length === 0) return undefined;
      let inflated: { buffer: Buffer; engine: zlib.Inflate };
      try {
        inflated = zlib.inflateSync(this.pending, { info: true, maxOutputLength: Math.max(object.size, 1) }) as unknown as typeof inflated;
      } catch (error) {
        if ((error as { code?: unknown }).code === "Z_BUF_ERROR") return undefined; // cut short: wait for more
        throw error;
      }
      if (inflated.buffer.length !== object.size) throw new PackFormatError("an object inflates to another size than its header says");
      this.advance(inflated.engine.bytesWritten);
      return object.keep ? inflated.buffer : true;
    }
    this.inflater ??= new StreamingInflate(object.keep ? object.size : 0);
    const { consumed, ended } = await this.inflater.write(this.pending);
    this.advance(consumed);
    if (!ended) return undefined;
    const inflater = this.inflater;
    this.inflater = undefined;
    const { size, content } = await inflater.result();
    if (size !== object.size) throw new PackFormatError("an object inflates to another size than its header says");
    return object.keep && content !== undefined ? content : true;
  }

  private finishObject(object: PackObject, content: Buffer | undefined): void {
    if (content === undefined) return;
    let commit = content;
    if (object.type !== COMMIT) {
      const base = object.baseOffset !== undefined ? this.keptByOffset.get(object.baseOffset) : this.keptById.get(object.baseId!);
      if (base === undefined) return;
      commit = applyDelta(base, content);
    }
    const id = createHash(this.options.hash).update(`commit ${commit.length}\0`).update(commit).digest("hex");
    if (this.keptBytes + commit.length <= this.maxKeptBytes) {
      this.keptBytes += commit.length;
      this.keptByOffset.set(object.offset, commit);
      this.keptById.set(id, commit);
    }
    this.options.onCommit({ id, parents: parentsOf(commit) });
  }
}

/** The `parent` headers of a commit, which follow its `tree` header (gitformat-commit). */
export function parentsOf(commit: Buffer): string[] {
  const headerEnd = commit.indexOf("\n\n");
  const lines = commit.toString("latin1", 0, headerEnd < 0 ? commit.length : headerEnd).split("\n");
  const parents: string[] = [];
  for (const line of lines.slice(1)) {
    if (!line.startsWith("parent ")) break;
    parents.push(line.slice(7));
  }
  return parents;
}

class PackFormatError extends Error {
  override readonly name = "PackFormatError";
}

function isZlibError(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return (typeof code === "string" && code.startsWith("Z_")) || (error as { code?: unknown })?.code === "ERR_BUFFER_TOO_LARGE" || error instanceof RangeError;
}

/**
 * One object's zlib stream through node:zlib's thread pool, written a piece at a time. Each write says how much of
 * the piece the stream took: less than all of it means the stream ended inside it, and the rest is the next object.
 */
class StreamingInflate {
  private readonly inflate = zlib.createInflate();
  private size = 0;
  private readonly kept: Buffer[] = [];
  private readonly ended: Promise<void>;

  constructor(private readonly keepUpTo: number) {
    this.inflate.on("data", (piece: Buffer) => {
      this.size += piece.length;
      if (this.size <= this.keepUpTo) this.kept.push(piece);
    });
    this.ended = new Promise((resolve, reject) => {
      this.inflate.once("end", resolve);
      this.inflate.once("error", reject);
    });
    this.ended.catch(() => undefined);
  }

  write(bytes: Buffer): Promise<{ consumed: number; ended: boolean }> {
    const before = this.inflate.bytesWritten;
    return new Promise((resolve, reject) => {
      this.inflate.write(bytes, (error) => {
        if (error) return reject(error);
        const consumed = this.inflate.bytesWritten - before;
        // zlib stops taking input at the end of its stream: a piece not taken whole holds the stream's end.
        resolve({ consumed, ended: consumed < bytes.length });
      });
    });
  }

  async result(): Promise<{ size: number; content: Buffer | undefined }> {
    await this.ended;
    return { size: this.size, content: this.keepUpTo > 0 && this.size <= this.keepUpTo ? Buffer.concat(this.kept) : undefined };
  }

  destroy(): void {
    this.inflate.destroy();
  }
}
