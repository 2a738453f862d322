import { EventEmitter, setMaxListeners } from "node:events";

/**
 * Wakes waiters when an operation changes, so long polls and watches answer on the change rather than on a
 * polling interval. In-process; replicas sharing PostgreSQL add their own wake-ups on top of this.
 */
export class Notifier {
  private readonly emitter = new EventEmitter();

  constructor() {
    this.emitter.setMaxListeners(0);
  }

  changed(operationId: string): void {
    this.emitter.emit(operationId);
    this.emitter.emit("*", operationId);
  }

  /** Resolves when `operationId` (or with "*", any operation) changes, the time is up, or `signal` aborts. */
  waitForChange(operationId: string, ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.emitter.off(operationId, done);
        signal?.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.emitter.once(operationId, done);
      if (signal) {
        setMaxListeners(0, signal);
        signal.addEventListener("abort", done, { once: true });
      }
    });
  }
}
