import { answerText, finishAnswer, send, type GitExchange } from "./git-exchange.js";
import { progressLine, rejectionReport, type PushAnswerFormat } from "./report-status.js";
import type { RefUpdate } from "./push-commands.js";

const RESULT_TYPE = "application/x-git-receive-pack-result";
/** While a push waits for an operator, a progress line this often keeps proxies from calling the connection idle. */
const STILL_WAITING_MS = 30_000;

/**
 * The answer to one receive-pack request, which may begin before anything is decided: a push held for an operator
 * says so on the sideband while it waits, and whatever follows (the upstream's own answer, or Axon's rejection)
 * continues the same response.
 */
export class PushAnswer {
  private started = false;
  private waitingDone = false;
  private stillWaiting: NodeJS.Timeout | undefined;

  constructor(
    private readonly exchange: GitExchange,
    private readonly format: PushAnswerFormat,
    private readonly updates: readonly RefUpdate[],
  ) {}

  /** The push waits for an operator's decision on `requestId`: the terminal is told, where the client can show it. */
  waiting(requestId: string): void {
    if (this.waitingDone || this.format.sidebandPacket === undefined) return;
    this.start();
    void send(this.exchange, progressLine(this.format, `waiting for operator approval (${requestId})\n`));
    const since = Date.now();
    this.stillWaiting = setInterval(() => {
      const minutes = Math.round((Date.now() - since) / 60_000);
      void send(this.exchange, progressLine(this.format, `still waiting for operator approval (${requestId}), ${minutes} min\r`));
    }, STILL_WAITING_MS);
    this.stillWaiting.unref();
  }

  /** The decision is in: no more waiting lines. */
  decided(): void {
    this.waitingDone = true;
    clearInterval(this.stillWaiting);
  }

  /** A line of progress, when the client shows them (the push going upstream after its approval). */
  async progress(text: string): Promise<void> {
    if (!this.started || this.format.sidebandPacket === undefined) return;
    await send(this.exchange, progressLine(this.format, `${text}\n`));
  }

  /**
   * Refuses the whole push: every ref `ng` with `reason`, which Git prints as `! [remote rejected] <ref> (<reason>)`.
   * A client that asked for no report (no modern Git) gets a 403 with the reason as text.
   */
  async reject(reason: string): Promise<void> {
    this.decided();
    if (!this.format.reportStatus) {
      if (this.started) return void this.exchange.res.destroy();
      return answerText(this.exchange, 403, reason.replace(/^axon: /, ""));
    }
    this.start();
    await send(this.exchange, rejectionReport(this.format, this.updates.map((update) => ({ ref: update.ref, reason }))));
    await finishAnswer(this.exchange);
  }

  /** The upstream answers: its bytes follow whatever was said already. */
  relayStart(): void {
    this.decided();
    this.start();
  }

  private start(): void {
    if (this.started) return;
    this.started = true;
    this.exchange.res.writeHead(200, { "content-type": RESULT_TYPE, "cache-control": "no-cache" });
  }
}
