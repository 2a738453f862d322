/**
 * Messages to the other side of the thread, posted together once per turn of this side's event loop: each
 * postMessage costs a serialization and wakes the receiving loop, and a chat's messages (or a crowd's) come in bursts.
 * The receiver takes each batch as an array, in order.
 */
export class Batches<Message> {
  private pending: Message[] = [];

  constructor(private readonly post: (batch: Message[]) => void) {}

  push(message: Message): void {
    if (this.pending.push(message) === 1) setImmediate(() => this.flush());
  }

  /** Posts what is pending now (before the port closes, say). */
  flush(): void {
    if (this.pending.length === 0) return;
    const batch = this.pending;
    this.pending = [];
    this.post(batch);
  }
}
