/**
 * Messages to the other side of the thread, posted together once per turn of this side's event loop: each
 * postMessage costs a serialization and wakes the receiving loop, and a chat's messages (or a crowd's) come in bursts.
 * The receiver takes each batch as an array, in order.
 */
export class Batches<Message> {
  private pending: Message[] = [];
  private immediate = false;
  private late: NodeJS.Timeout | undefined;

  constructor(
    private readonly post: (batch: Message[]) => void,
    /** How long a message pushed with `pushLate` may wait for company. */
    private readonly lateMs = 1000,
  ) {}

  push(message: Message): void {
    this.pending.push(message);
    if (this.immediate) return;
    this.immediate = true;
    setImmediate(() => {
      this.immediate = false;
      this.flush();
    });
  }

  /** A message no one waits for (a count for the metrics): it leaves with the next batch, or after `lateMs`. */
  pushLate(message: Message): void {
    this.pending.push(message);
    this.late ??= setTimeout(() => this.flush(), this.lateMs).unref();
  }

  /** Posts what is pending now (before the port closes, say). */
  flush(): void {
    clearTimeout(this.late);
    this.late = undefined;
    if (this.pending.length === 0) return;
    const batch = this.pending;
    this.pending = [];
    this.post(batch);
  }
}
