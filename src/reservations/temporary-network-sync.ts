import type { TemporaryNetworkSpec } from "../agents/temporary-networks.js";
import type { Logger } from "../logger.js";
import type { Clock } from "../operations/clock.js";

export interface TemporaryNetworkSyncOptions {
  /** The networks to serve, as the database has them now. */
  read: () => Promise<TemporaryNetworkSpec[]>;
  /** Where they are served: this process's registries (the server's, the chat thread's). */
  serve: (specs: TemporaryNetworkSpec[]) => void;
  /** Removes expired rows. */
  sweep: () => Promise<unknown>;
  logger: Logger;
  /** Expiry is judged by it; the sync reads again when the soonest network expires, for what cannot judge itself. */
  clock: Clock;
  /** How often to read again, for what other replicas changed; 0 = only when asked (one process on SQLite). */
  pollMs: number;
  sweepMs: number;
}

/**
 * Keeps what this process serves equal to the temporary networks in the database: read at start, after each change
 * made here, when a name shaped like a reserved one is asked for and not served yet, and (with replicas) every
 * `pollMs`, which is as long as another replica's deletion or new public network can take to show here.
 */
export class TemporaryNetworkSync {
  private running: Promise<void> | undefined;
  private queued: Promise<void> | undefined;
  private timers: NodeJS.Timeout[] = [];
  private expiry: NodeJS.Timeout | undefined;

  constructor(private readonly options: TemporaryNetworkSyncOptions) {}

  /** Resolves once a read begun after this call is served: a change committed before it is in. */
  refresh(): Promise<void> {
    if (this.queued !== undefined) return this.queued;
    if (this.running === undefined) return this.run();
    const queued = this.running.then(() => {
      this.queued = undefined;
      return this.run();
    });
    this.queued = queued;
    return queued;
  }

  /** Reads now, then keeps reading and sweeping on the timers. Never keeps the process up. */
  async start(): Promise<void> {
    await this.refresh().catch(() => undefined);
    const { pollMs, sweepMs, sweep, logger } = this.options;
    if (pollMs > 0) this.timers.push(setInterval(() => void this.refresh().catch(() => undefined), pollMs));
    this.timers.push(setInterval(() => void sweep().catch((error: unknown) => logger.warn({ err: error, category: "storage" }, "temporary network sweep failed")), sweepMs));
    for (const timer of this.timers) timer.unref();
  }

  close(): void {
    for (const timer of this.timers) clearInterval(timer);
    this.timers = [];
    clearTimeout(this.expiry);
  }

  private run(): Promise<void> {
    const running = this.options
      .read()
      .then((specs) => {
        this.options.serve(specs);
        this.readAgainAtExpiry(specs);
      })
      .catch((error: unknown) => {
        this.options.logger.warn({ err: error, category: "storage" }, "could not read the temporary networks; serving the ones read before");
        throw error;
      })
      .finally(() => {
        if (this.running === running) this.running = undefined;
      });
    this.running = running;
    return running;
  }

  /** The chat thread serves what it was last given: it is given the set again once the soonest expires. */
  private readAgainAtExpiry(specs: TemporaryNetworkSpec[]): void {
    clearTimeout(this.expiry);
    const soonest = Math.min(...specs.map((spec) => spec.expiresAt.getTime()));
    if (!Number.isFinite(soonest)) return;
    // Timers hold at most about 24.8 days; a later expiry is met by an earlier read.
    const delay = Math.min(Math.max(0, soonest - this.options.clock.now().getTime()) + 10, 2 ** 31 - 1);
    this.expiry = setTimeout(() => void this.refresh().catch(() => undefined), delay);
    this.expiry.unref();
  }
}
