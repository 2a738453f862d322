import type { HttpResponse } from "../server/listener.js";
import type { OpenAiError } from "./openai-errors.js";

/** What `/v1` writes an answer to: the HTTP/1 or HTTP/2 compatibility response (their own overloads make the union uncallable). */
export interface AnswerSink {
  readonly headersSent: boolean;
  readonly writableEnded: boolean;
  readonly writableFinished: boolean;
  readonly destroyed: boolean;
  writeHead(status: number, headers: Record<string, string>): unknown;
  write(chunk: Uint8Array | string): boolean;
  end(chunk?: Uint8Array | string): unknown;
  destroy(): unknown;
  once(event: "close" | "drain" | "finish", listener: () => void): unknown;
  off(event: "close" | "drain" | "finish", listener: () => void): unknown;
}

export const sinkOf = (res: HttpResponse): AnswerSink => res as unknown as AnswerSink;

export function writeJsonAnswer(res: AnswerSink, status: number, json: unknown, headers: Record<string, string> = {}): void {
  const body = Buffer.from(JSON.stringify(json));
  res.writeHead(status, { "content-type": "application/json", "content-length": String(body.byteLength), ...headers });
  res.end(body);
}

/** An error in OpenAI's shape, or, once a stream has begun, as the error event OpenAI's SDKs raise from a stream. */
export function writeErrorAnswer(res: AnswerSink, error: OpenAiError, headers: Record<string, string> = {}): void {
  if (res.writableEnded || res.destroyed) return;
  if (!res.headersSent) return writeJsonAnswer(res, error.status, { error: error.error }, { ...error.headers, ...headers });
  res.end(`data: ${JSON.stringify({ error: error.error })}\n\n`);
}

/** The head of a `text/event-stream` answer; `X-Accel-Buffering` keeps nginx-like proxies from holding it back. */
export function eventStreamHeaders(headers: Record<string, string> = {}): Record<string, string> {
  return { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", "x-accel-buffering": "no", ...headers };
}

/** Writes, then waits while the client is slower than the writer (resolves early if the client leaves). */
export function writeWithBackpressure(res: AnswerSink, chunk: Uint8Array | string): Promise<void> | undefined {
  if (res.write(chunk) || res.destroyed) return undefined;
  return drained(res);
}

/** Resolves on `drain` or when the response closes, whichever comes first. */
export function drained(res: AnswerSink): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.once("drain", done);
    res.once("close", done);
  });
}

/** One server-sent event carrying a chunk. */
export function eventOf(json: unknown): string {
  return `data: ${JSON.stringify(json)}\n\n`;
}

export const doneEvent = "data: [DONE]\n\n";
