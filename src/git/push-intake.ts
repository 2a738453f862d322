import { createHash } from "node:crypto";
import zlib from "node:zlib";
import { AxonError, Code } from "../errors.js";
import { extendBodyDeadline } from "../server/intake-timeouts.js";
import type { HttpRequest } from "../server/listener.js";
import { PackCommitReader } from "./pack-commits.js";
import { PushClassifier, type ClassifiedUpdate } from "./push-classes.js";
import { PushCommandsReader, type PushCommands } from "./push-commands.js";
import type { Spool } from "./spool.js";

/** The slowest a push's body may arrive, past the body timeout every request has: a stalled client is let go. */
const PUSH_BYTES_PER_SECOND = 64 * 1024;
/**
 * What an authenticated push gets at once, past the body timeout: Git sends the commands, then counts and compresses
 * objects (minutes, for a large repository) before the first byte of the pack.
 */
const PACK_PREPARATION_MS = 10 * 60_000;

export interface PushBody {
  bytes: number;
  /** The SHA-256 of the body exactly as it arrived (and as it is forwarded). */
  sha256: string;
}

/**
 * A receive-pack request's body as it arrives: every byte goes to the spool unchanged (unless discarded) and through
 * a SHA-256, and the body, decompressed when the client gzipped it, is read for its commands and then its pack's
 * commits, which settle the classes of its updates. Reading waits for the spool and the pack reader, so a slow disk
 * or inflater slows the client (TCP backpressure) instead of filling memory.
 */
export class PushIntake {
  /** Resolves with the commands once read; rejects when the body cannot be read as a push. */
  readonly commands: Promise<PushCommands>;
  /** Resolves once every update's class is final: early, when the pack has proven every fast-forward, or at its end. */
  readonly settled: Promise<ClassifiedUpdate[]>;
  /** Resolves once the whole body has arrived. */
  readonly done: Promise<PushBody>;

  private resolveCommands!: (commands: PushCommands) => void;
  private resolveSettled!: (updates: ClassifiedUpdate[]) => void;
  private discarding = false;
  private classifier: PushClassifier | undefined;

  constructor(
    private readonly req: HttpRequest,
    private readonly spool: Spool,
    private readonly maxBytes: number,
  ) {
    let rejectCommands!: (error: unknown) => void;
    let rejectSettled!: (error: unknown) => void;
    this.commands = new Promise((resolve, reject) => ((this.resolveCommands = resolve), (rejectCommands = reject)));
    this.settled = new Promise((resolve, reject) => ((this.resolveSettled = resolve), (rejectSettled = reject)));
    this.done = this.read().catch((error: unknown) => {
      spool.fail(error instanceof Error ? error : new Error(String(error)));
      rejectCommands(error);
      rejectSettled(error);
      throw error;
    });
    for (const promise of [this.commands, this.settled, this.done]) promise.catch(() => undefined);
  }

  /** The rest of the body is read and dropped: the push was refused, and only its end is waited for. */
  discard(): void {
    this.discarding = true;
  }

  private async read(): Promise<PushBody> {
    const hash = createHash("sha256");
    const gunzip = encodingOf(this.req) === "gzip" ? new Decompressor() : undefined;
    const commands = new PushCommandsReader();
    let pack: PackCommitReader | undefined;
    let bytes = 0;
    extendBodyDeadline(this.req, PACK_PREPARATION_MS);

    const parse = async (piece: Buffer): Promise<void> => {
      if (pack === undefined) {
        const read = commands.push(piece);
        if (read === undefined) return;
        this.resolveCommands(read.commands);
        this.classifier = new PushClassifier(read.commands.updates);
        const classifier = this.classifier;
        pack = new PackCommitReader({ hash: read.commands.idLength === 40 ? "sha1" : "sha256", onCommit: (commit) => classifier.addCommit(commit) });
        piece = read.rest;
      }
      // Once every update is settled, the rest of the pack has nothing to prove: it is only spooled.
      if (this.classifier!.settled) return this.resolveSettled(this.classifier!.classified());
      if (piece.length > 0) await pack.write(piece);
      if (this.classifier!.settled) this.resolveSettled(this.classifier!.classified());
    };

    for await (const chunk of this.req as AsyncIterable<Buffer>) {
      bytes += chunk.length;
      if (bytes > this.maxBytes) throw pushTooLarge(this.maxBytes);
      extendBodyDeadline(this.req, (chunk.length / PUSH_BYTES_PER_SECOND) * 1000);
      hash.update(chunk);
      if (!this.discarding) await this.spool.append(chunk);
      if (!this.discarding) await parse(gunzip ? await gunzip.push(chunk) : chunk);
    }
    if (gunzip && !this.discarding) await parse(await gunzip.end());
    if (pack === undefined) {
      if (this.discarding) throw new AxonError(Code.Aborted, "GIT_PUSH_DISCARDED", "the push was refused before its commands were read");
      throw new AxonError(Code.InvalidArgument, "GIT_PUSH_MALFORMED", "the push ended before its commands did");
    }
    pack.end();
    this.resolveSettled(this.classifier!.classified());
    this.spool.end();
    if (!this.req.complete) throw clientLeft();
    return { bytes, sha256: hash.digest("hex") };
  }
}

export function pushTooLarge(maxBytes: number): AxonError {
  return new AxonError(Code.ResourceExhausted, "GIT_PUSH_TOO_LARGE", `a push through Axon carries at most ${maxBytes} bytes (AXON_GIT_MAX_PUSH_BYTES)`);
}

export function clientLeft(): AxonError {
  return new AxonError(Code.Canceled, "CLIENT_LEFT", "the client went away");
}

function encodingOf(req: HttpRequest): string | undefined {
  const value = req.headers["content-encoding"];
  return typeof value === "string" ? value.trim().toLowerCase() : undefined;
}

/** gunzip a piece at a time, awaiting each piece's output (node:zlib works in the thread pool). */
class Decompressor {
  private readonly gunzip = zlib.createGunzip();
  private output: Buffer[] = [];
  private failure: Error | undefined;

  constructor() {
    this.gunzip.on("data", (piece: Buffer) => this.output.push(piece));
    this.gunzip.on("error", (error) => (this.failure = error));
  }

  push(bytes: Buffer): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      this.gunzip.write(bytes, () => (this.failure ? reject(malformedGzip()) : resolve(this.take())));
    });
  }

  end(): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      this.gunzip.end(() => (this.failure ? reject(malformedGzip()) : resolve(this.take())));
    });
  }

  private take(): Buffer {
    const output = Buffer.concat(this.output);
    this.output = [];
    return output;
  }
}

function malformedGzip(): AxonError {
  return new AxonError(Code.InvalidArgument, "GIT_PUSH_MALFORMED", "the push's gzip body is malformed");
}
