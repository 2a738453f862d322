import { performance } from "node:perf_hooks";
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from "node:worker_threads";
import { DriverAdapterError } from "@prisma/driver-adapter-utils";
import { threadEntryFile } from "../../project-root.js";
import type { Failure, Opened, Reply, Request, ThreadChannel, ThreadOptions } from "./protocol.js";

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
const threadEntry = threadEntryFile("store/sqlite");

export class DatabaseThread {
  private readonly waiters = new Map<number, Waiter>();
  private lastId = 0;
  private ended = false;
  private closing = false;

  /** Starts a thread and waits until it has opened the database. */
  static async start(options: ThreadOptions, settings: ThreadSettings = {}): Promise<DatabaseThread> {
    const { port1: port, port2: threadPort } = new MessageChannel();
    const replies = new Int32Array(new SharedArrayBuffer(4));
    const channel: ThreadChannel = { port: threadPort, replies };
    const worker = new Worker(threadEntry, {
      workerData: { options, channel },
      transferList: [threadPort],
      ...(settings.heapLimitMb === undefined ? {} : { resourceLimits: { maxOldGenerationSizeMb: settings.heapLimitMb } }),
    });
    try {
      const opened = await openedOrEnded(port, worker);
      if (!opened.opened) throw errorOf(opened.failure);
    } catch (error) {
      port.close();
      await worker.terminate();
      throw error;
    }
    return new DatabaseThread(worker, port, replies, settings.onUnexpectedExit);
  }

  private constructor(
    private readonly worker: Worker,
    private readonly port: MessagePort,
    private readonly replies: Int32Array,
    onUnexpectedExit?: (error: Error) => void,
  ) {
    // Idle, the thread does not keep the process alive; a request in flight does (see request()).
    worker.unref();
    port.unref();
    let crash: Error | undefined;
    port.on("message", (reply: Reply) => this.settle(reply));
    worker.on("error", (error) => (crash = error));
    worker.on("exit", (code) => {
      this.ended = true;
      port.close();
      for (const waiter of this.waiters.values()) waiter.reject(connectionClosed());
      this.waiters.clear();
      if (!this.closing) onUnexpectedExit?.(crash ?? new Error(`the database thread exited with code ${code}`));
    });
  }

  /** False once the thread has ended, by close() or otherwise. */
  get alive(): boolean {
    return !this.ended;
  }

  /**
   * Sends a request; its promise settles with the reply. With `blockMs`, the event loop blocks (Atomics.wait) until
   * the reply has come, for at most that long, so a step that holds the writer costs no turn of the loop: its reply
   * is then settled before request() returns, and its awaiter runs in this same task.
   */
  request<T>(request: Unsent, blockMs = 0): Promise<T> {
    if (this.ended) return Promise.reject(connectionClosed());
    const id = ++this.lastId;
    const seen = Atomics.load(this.replies, 0);
    const reply = new Promise<T>((resolve, reject) => this.waiters.set(id, { resolve: resolve as (value: unknown) => void, reject }));
    if (this.waiters.size === 1) this.port.ref();
    this.port.postMessage({ ...request, id });
    if (blockMs > 0) this.block(id, seen, blockMs);
    return reply;
  }

  /** Closes the connections (checkpointing the WAL) and waits for the thread to end. */
  async close(): Promise<void> {
    if (this.ended) return;
    this.closing = true;
    // Referenced until it has ended: whoever waits for close() must not see the process exit first.
    this.worker.ref();
    const exited = new Promise((resolve) => this.worker.once("exit", resolve));
    await this.request({ kind: "close" }).catch(() => undefined); // a thread that dies meanwhile has closed too
    await exited;
  }

  /** Takes replies off the port until `id`'s has come (or word that it must queue), or `ms` have passed. */
  private block(id: number, seen: number, ms: number): void {
    const deadline = performance.now() + ms;
    for (;;) {
      for (let received = receiveMessageOnPort(this.port); received; received = receiveMessageOnPort(this.port)) {
        const reply = received.message as Reply;
        if (reply.id === id && "queued" in reply) return;
        this.settle(reply);
      }
      if (!this.waiters.has(id)) return;
      const remaining = deadline - performance.now();
      if (remaining <= 0 || Atomics.wait(this.replies, 0, seen, remaining) === "timed-out") return;
      seen = Atomics.load(this.replies, 0);
    }
  }

  private settle(reply: Reply): void {
    if ("queued" in reply) return;
    const waiter = this.waiters.get(reply.id);
    if (!waiter) return;
    this.waiters.delete(reply.id);
    if (this.waiters.size === 0 && !this.closing) this.port.unref();
    if ("failure" in reply) waiter.reject(errorOf(reply.failure));
    else waiter.resolve(reply.value);
  }
}

/** The thread's first message, or its end if it ends first (it could not even load). */
function openedOrEnded(port: MessagePort, worker: Worker): Promise<Opened> {
  return new Promise((resolve, reject) => {
    const ended = (error: unknown) => reject(error instanceof Error ? error : new Error(`the database thread ended with code ${String(error)}`));
    worker.once("error", ended).once("exit", ended);
    port.once("message", (message: Opened) => {
      worker.off("error", ended).off("exit", ended);
      resolve(message);
    });
  });
}

function errorOf(failure: Failure): Error {
  if ("driver" in failure) return new DriverAdapterError(failure.driver);
  return Object.assign(new Error(failure.message), { name: failure.name });
}

function connectionClosed(): DriverAdapterError {
  return new DriverAdapterError({ kind: "ConnectionClosed" });
}
