import type { JsonValue } from "@bufbuild/protobuf";
import { setHeaders, type ResponseSink } from "./http-response.js";

export const jsonLinesContentType = "application/json-lines";

/**
 * neuro-san's streaming body: status 200 and the headers go out at once when the stream starts, then
 * one JSON value per line, each sent as soon as it exists. The lines produced in one turn of the event loop (a chat's
 * messages arrive in bursts, one per LLM round trip) leave in one write: the bytes are the same, with one chunk's
 * framing and one trip through the HTTP stack instead of one per line.
 */
export class JsonLinesWriter {
  #started = false;
  /** Lines not written yet: written together once this turn's work is done. */
  #pending = "";
  /** Set while the socket has more than it takes: the next line waits for it to drain. */
  #draining: Promise<void> | undefined;

  constructor(
    private readonly res: ResponseSink,
    /** Aborts when the client has gone: nothing more is written. */
    private readonly signal: AbortSignal,
    /** The server's headers for this call (its request id). */
    private readonly own: Record<string, string>,
  ) {}

  get started(): boolean {
    return this.#started;
  }

  /** Sends the 200 and the headers, once; `headers` are the service's own, if it has any yet. */
  start(headers?: Headers): void {
    if (this.#started || this.signal.aborted || this.res.headersSent) return;
    this.#started = true;
    for (const [name, value] of Object.entries(this.own)) this.res.setHeader(name, value);
    if (headers !== undefined) setHeaders(this.res, headers);
    this.res.setHeader("content-type", jsonLinesContentType);
    this.res.setHeader("cache-control", "no-cache");
    this.res.writeHead(200);
    this.res.flushHeaders?.();
  }

  /** Writes one line (with the others of this turn); resolves once the socket can take more (or the client has gone). */
  async writeLine(json: JsonValue): Promise<void> {
    this.start();
    if (this.signal.aborted || this.res.writableEnded) return;
    // After the promises of this turn have run, so that every line they produce joins the write.
    if (this.#pending === "") process.nextTick(() => this.flush());
    this.#pending += `${JSON.stringify(json)}\n`;
    await this.#draining;
  }

  end(): void {
    if (this.res.writableEnded) return;
    const lines = this.#pending;
    this.#pending = "";
    if (lines === "" || this.signal.aborted) this.res.end();
    else this.res.end(lines);
  }

  private flush(): void {
    const lines = this.#pending;
    this.#pending = "";
    if (lines === "" || this.signal.aborted || this.res.writableEnded) return;
    if (!this.res.write(lines)) this.#draining ??= this.drained().finally(() => (this.#draining = undefined));
  }

  private drained(): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        this.res.off("drain", done);
        this.signal.removeEventListener("abort", done);
        resolve();
      };
      this.res.once("drain", done);
      this.signal.addEventListener("abort", done, { once: true });
    });
  }
}
