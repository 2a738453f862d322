import { Worker } from "node:worker_threads";
import { DriverAdapterError } from "@prisma/driver-adapter-utils";
import type { Failure, Opened, Reply, Request, ThreadOptions } from "./protocol.js";

type Unsent = Request extends infer R ? (R extends Request ? Omit<R, "id"> : never) : never;

export interface ThreadSettings {
  /** The thread's JavaScript heap limit: rows past it end the thread (its requests fail), not the process. */
  heapLimitMb?: number;
  /** Told when the thread ends without close(): it crashed or ran out of memory. */
  onUnexpectedExit?: (error: Error) => void;
}

interface Waiter {
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/**
 * The database thread as the event loop sees it: requests out, replies matched back by id. If the thread dies
 * (crash, out of memory, terminated), every request it had not answered fails as a closed connection, which
 * storage-errors.ts counts as unavailable, and so does every later one: nothing waits forever.
 */
export class DatabaseThread {
  private readonly waiters = new Map<number, Waiter>();
  private lastId = 0;
  private ended = false;
  private closing = false;

  /** Starts a thread and waits until it has opened the database. */
  static async start(options: ThreadOptions, settings: ThreadSettings = {}): Promise<DatabaseThread> {
    const resourceLimits = settings.heapLimitMb === undefined ? undefined : { maxOldGenerationSizeMb: settings.heapLimitMb };
    const worker = new Worker(new URL("./thread-entry.mjs", import.meta.url), { workerData: options, resourceLimits });
    const opened = await new Promise<Opened>((resolve, reject) => {
      const failed = (error: unknown) => reject(error instanceof Error ? error : new Error(`the database thread ended with code ${String(error)}`));
      worker.once("message", (message: Opened) => {
        worker.off("error", failed).off("exit", failed);
        resolve(message);
      });
      worker.once("error", failed).once("exit", failed);
    });
    if (!opened.opened) {
      await worker.terminate();
      throw errorOf(opened.failure);
    }
    return new DatabaseThread(worker, settings.onUnexpectedExit);
  }

  private constructor(
    private readonly worker: Worker,
    onUnexpectedExit?: (error: Error) => void,
  ) {
    // Idle, the thread does not keep the process alive; a request in flight does (see request()).
    worker.unref();
    let crash: Error | undefined;
    worker.on("message", (reply: Reply) => this.settle(reply));
    worker.on("error", (error) => (crash = error));
    worker.on("exit", (code) => {
      this.ended = true;
      for (const waiter of this.waiters.values()) waiter.reject(connectionClosed());
      this.waiters.clear();
      if (!this.closing) onUnexpectedExit?.(crash ?? new Error(`the database thread exited with code ${code}`));
    });
  }

  /** False once the thread has ended, by close() or otherwise. */
  get alive(): boolean {
    return !this.ended;
  }

  request<T>(request: Unsent): Promise<T> {
    if (this.ended) return Promise.reject(connectionClosed());
    const id = ++this.lastId;
    return new Promise<T>((resolve, reject) => {
      this.worker.postMessage({ ...request, id });
      if (this.waiters.size === 0) this.worker.ref();
      this.waiters.set(id, { resolve: resolve as (value: unknown) => void, reject });
    });
  }

  /** Closes the connections (checkpointing the WAL) and waits for the thread to end. */
  async close(): Promise<void> {
    if (this.ended) return;
    this.closing = true;
    const exited = new Promise((resolve) => this.worker.once("exit", resolve));
    // The thread stays referenced until it has ended: whoever waits for close() must not see the process exit first.
    await this.request({ kind: "close" }).catch(() => undefined); // a thread that dies meanwhile has closed too
    await exited;
  }

  private settle(reply: Reply): void {
    const waiter = this.waiters.get(reply.id);
    if (!waiter) return;
    this.waiters.delete(reply.id);
    if (this.waiters.size === 0 && !this.closing) this.worker.unref();
    if ("failure" in reply) waiter.reject(errorOf(reply.failure));
    else waiter.resolve(reply.value);
  }
}

function errorOf(failure: Failure): Error {
  if ("driver" in failure) return new DriverAdapterError(failure.driver);
  return Object.assign(new Error(failure.message), { name: failure.name });
}

function connectionClosed(): DriverAdapterError {
  return new DriverAdapterError({ kind: "ConnectionClosed" });
}
