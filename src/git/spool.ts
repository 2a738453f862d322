import { randomBytes } from "node:crypto";
import { mkdir, open, unlink, type FileHandle } from "node:fs/promises";
import path from "node:path";

const READ_BYTES = 256 * 1024;
/** How much a forwarder that follows the writer may have waiting for it before the writer waits: reading the client and writing the host overlap. */
const LIVE_BYTES = 1024 * 1024;

/**
 * A push's body while it is decided: written to disk as it arrives, read back from the start by the forwarder. A
 * forwarder that catches up with the file takes the rest from memory, and the writer waits while more than a MiB
 * is waiting for it: from then on the body streams straight through, at the pace the host takes it. The file is
 * unlinked as soon as it is open, so a crash leaves nothing behind; memory holds a read buffer and at most a MiB of
 * pieces, whatever the size of the pack. Pieces are appended one at a time.
 */
export class Spool {
  /** Bytes appended in all. */
  private size = 0;
  /** Bytes in the file: all of them until the forwarder caught up. */
  private fileSize = 0;
  private ended = false;
  private failure: Error | undefined;
  private waiters: (() => void)[] = [];
  /** Set once the forwarder has read the whole file: later pieces go to it instead. */
  private following = false;
  private readerGone = false;
  private readonly live: { bytes: Uint8Array; taken: () => void }[] = [];
  private liveBytes = 0;
  private closed = false;

  private constructor(private readonly file: FileHandle) {}

  static async create(directory: string): Promise<Spool> {
    await mkdir(directory, { recursive: true, mode: 0o700 });
    const file = path.join(directory, `push-${randomBytes(12).toString("hex")}`);
    const handle = await open(file, "w+", 0o600);
    await unlink(file);
    return new Spool(handle);
  }

  get bytes(): number {
    return this.size;
  }

  /** Keeps `bytes`; resolves once they are on disk, or once the forwarder that follows has taken them. */
  async append(bytes: Uint8Array): Promise<void> {
    this.size += bytes.byteLength;
    if (this.readerGone) return;
    if (this.following) {
      const taken = new Promise<void>((resolve) => this.live.push({ bytes, taken: resolve }));
      this.liveBytes += bytes.byteLength;
      this.wake();
      if (this.liveBytes > LIVE_BYTES) await taken;
      return;
    }
    let written = 0;
    while (written < bytes.byteLength) {
      const { bytesWritten } = await this.file.write(bytes, written, bytes.byteLength - written, this.fileSize + written);
      written += bytesWritten;
    }
    this.fileSize += bytes.byteLength;
    this.wake();
  }

  /** Everything has been appended. */
  end(): void {
    this.ended = true;
    this.wake();
  }

  /** The body will never be whole (the client left, it grew too large): a reader following it fails with `error`. */
  fail(error: Error): void {
    this.failure ??= error;
    this.wake();
  }

  /** The bytes from the first, as they are appended, until the end. One reader. */
  async *read(): AsyncGenerator<Uint8Array> {
    let position = 0;
    try {
      for (;;) {
        if (this.failure) throw this.failure;
        if (position < this.fileSize) {
          const buffer = Buffer.allocUnsafe(Math.min(READ_BYTES, this.fileSize - position));
          const { bytesRead } = await this.file.read(buffer, 0, buffer.length, position);
          position += bytesRead;
          yield buffer.subarray(0, bytesRead);
          continue;
        }
        this.following = true;
        const next = this.live.shift();
        if (next !== undefined) {
          yield next.bytes;
          // Taken once the consumer asks for more: it has sent this piece on.
          this.liveBytes -= next.bytes.byteLength;
          next.taken();
        } else if (this.ended) {
          return;
        } else {
          await new Promise<void>((resolve) => this.waiters.push(resolve));
        }
      }
    } finally {
      // A forwarder that stopped (the host failed) must not leave the writer waiting for it.
      this.readerGone = true;
      for (const piece of this.live.splice(0)) piece.taken();
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.fail(new Error("the spool is closed"));
    for (const piece of this.live.splice(0)) piece.taken();
    await this.file.close();
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }
}
