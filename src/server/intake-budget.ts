import { Code } from "@connectrpc/connect";
import { AxonError } from "../errors.js";

/** What a body reader holds on to: the request (HTTP/1.1, HTTP/2 compatibility) or the HTTP/2 stream itself. */
export interface ClosingRequest {
  once(event: "close", listener: () => void): unknown;
}

/**
 * The bytes of unauthenticated request bodies held in memory at once, across every connection. An open route (the
 * neuro-san surface, health, reflection) must read a body before it can tell a chat from junk, so without one shared
 * cap a few hundred stalled uploads hold gigabytes. Authenticated bodies are not counted: their senders are known.
 */
export class IntakeBudget {
  private held = 0;

  constructor(readonly maxBytes: number) {}

  /**
   * The tally of one unauthenticated body. Given the request, it gives its bytes back when the request closes (read to
   * its end, answered or abandoned), so no path through a reader can keep them; without, the reader releases it
   * however its read ends (readRequestBody does).
   */
  tally(request?: ClosingRequest): BodyTally {
    let counted = 0;
    const tally: BodyTally = {
      add: (bytes) => {
        if (this.held + bytes > this.maxBytes) throw intakeFull();
        this.held += bytes;
        counted += bytes;
      },
      release: () => {
        this.held -= counted;
        counted = 0;
      },
    };
    request?.once("close", tally.release);
    return tally;
  }
}

/** One body's share of the budget. */
export interface BodyTally {
  /** Counts the next chunk; throws INTAKE_FULL (UNAVAILABLE: 503 with Retry-After) when the budget cannot hold it. */
  add(bytes: number): void;
  /** Gives the body's bytes back (it has been read, or refused). */
  release(): void;
}

function intakeFull(): AxonError {
  return new AxonError(Code.Unavailable, "INTAKE_FULL", "the server holds as many unauthenticated request bodies as it may; retry shortly", {
    retryAfterSeconds: 1,
  });
}
