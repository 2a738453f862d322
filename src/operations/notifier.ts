import { EventEmitter, setMaxListeners } from "node:events";
import type { OperationRow } from "./store.js";

/** The event workers wait on: some operation became approved. A symbol, so no operation id can collide with it. */
const workAvailable = Symbol("work available");

/**
 * Wakes waiters when an operation changes, so long polls and watches answer on the change rather than on a
 * polling interval. Changes made here wake local waiters at once; with `publishTo`, they are also announced to
 * other replicas, whose announcements arrive through `receivedFromReplica`. A change that names the new state lets
 * workers sleep through every change but the one they can act on: an operation becoming approved. A local change that
 * carries the row as written hands it to the waiters on its id, who answer with it instead of reading it again.
 */
export class Notifier {
  private readonly emitter = new EventEmitter();
  private publish: ((message: string) => void) | undefined;

  constructor() {
    this.emitter.setMaxListeners(0);
  }

  /** Announces every local change to the other replicas too. */
  publishTo(publish: (message: string) => void): void {
    this.publish = publish;
  }

  changed(operationId: string, state?: string): void {
    this.wake(operationId, state);
    this.publish?.(state === undefined ? operationId : `${operationId} ${state}`);
  }

  /** An operation changed to `row`, as the statement that changed it returned it. */
  rowChanged(row: OperationRow): void {
    this.wake(row.id, row.state, row);
    this.publish?.(`${row.id} ${row.state}`);
  }

  /**
   * A new operation. Nobody can be waiting on its id yet (the submitter learns it from this submission's answer), so
   * other replicas hear of it only when it is work for their workers; their event feeds see it at their next re-read.
   */
  created(operationId: string, state: string): void {
    this.wake(operationId, state);
    if (state === "approved") this.publish?.(`${operationId} ${state}`);
  }

  /** A replica's announcement: the operation id, then its new state when known. */
  receivedFromReplica(message: string): void {
    const [operationId, state] = message.split(" ");
    if (operationId) this.wake(operationId, state);
  }

  /**
   * Resolves when `operationId` (or with "*", any operation) changes, the time is up, or `signal` aborts: with the
   * operation as changed when the change was made here with its row (`rowChanged`), else with nothing.
   */
  waitForChange(operationId: string, ms: number, signal?: AbortSignal): Promise<OperationRow | undefined> {
    return this.waitFor(operationId, ms, signal);
  }

  /** Resolves when some operation becomes approved, the time is up, or `signal` aborts. */
  async waitForWork(ms: number, signal?: AbortSignal): Promise<void> {
    await this.waitFor(workAvailable, ms, signal);
  }

  private waitFor(event: string | symbol, ms: number, signal?: AbortSignal): Promise<OperationRow | undefined> {
    return new Promise((resolve) => {
      const done = (row?: OperationRow): void => {
        clearTimeout(timer);
        this.emitter.off(event, done);
        signal?.removeEventListener("abort", ended);
        resolve(row);
      };
      const ended = (): void => done();
      const timer = setTimeout(ended, ms);
      this.emitter.once(event, done);
      if (signal) {
        setMaxListeners(0, signal);
        signal.addEventListener("abort", ended, { once: true });
      }
    });
  }

  private wake(operationId: string, state: string | undefined, row?: OperationRow): void {
    this.emitter.emit(operationId, row);
    this.emitter.emit("*");
    if (state === "approved") this.emitter.emit(workAvailable);
  }
}
