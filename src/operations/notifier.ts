import { EventEmitter, setMaxListeners } from "node:events";

/**
 * Wakes waiters when an operation changes, so long polls and watches answer on the change rather than on a
 * polling interval. Changes made here wake local waiters at once; with `publishTo`, they are also announced to
 * other replicas, whose announcements arrive through `receivedFromReplica`.
 */
export class Notifier {
  private readonly emitter = new EventEmitter();
  private publish: ((operationId: string) => void) | undefined;

  constructor() {
    this.emitter.setMaxListeners(0);
  }

  /** Announces every local change to the other replicas too. */
  publishTo(publish: (operationId: string) => void): void {
    this.publish = publish;
  }

  changed(operationId: string): void {
    this.wake(operationId);
    this.publish?.(operationId);
  }

  receivedFromReplica(operationId: string): void {
    this.wake(operationId);
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

  private wake(operationId: string): void {
    this.emitter.emit(operationId);
    this.emitter.emit("*", operationId);
  }
}
