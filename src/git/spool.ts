import { randomBytes } from "node:crypto";
import { mkdir, open, unlink, type FileHandle } from "node:fs/promises";
import path from "node:path";

const READ_BYTES = 256 * 1024;

/**
 * A push's body on disk while it is decided: written as it arrives, read back from the start by the forwarder,
 * which may begin before the writing ends and then follows it. The file is unlinked as soon as it is open, so a
 * crash leaves nothing behind; memory holds one read buffer, whatever the size of the pack.
 */
export class Spool {
  private size = 0;
  private ended = false;
  private failure: Error | undefined;
  private waiters: (() => void)[] = [];
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

  async append(bytes: Uint8Array): Promise<void> {
    let written = 0;
    while (written < bytes.byteLength) {
      const { bytesWritten } = await this.file.write(bytes, written, bytes.byteLength - written, this.size + written);
      written += bytesWritten;
    }
    this.size += bytes.byteLength;
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

  /** The bytes from the first, as they are appended, until the end. */
  async *read(): AsyncGenerator<Buffer> {
    let position = 0;
    for (;;) {
      if (this.failure) throw this.failure;
      if (position < this.size) {
        const buffer = Buffer.allocUnsafe(Math.min(READ_BYTES, this.size - position));
        const { bytesRead } = await this.file.read(buffer, 0, buffer.length, position);
        position += bytesRead;
        yield buffer.subarray(0, bytesRead);
      } else if (this.ended) {
        return;
      } else {
        await new Promise<void>((resolve) => this.waiters.push(resolve));
      }
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.fail(new Error("the spool is closed"));
    await this.file.close();
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }
}
