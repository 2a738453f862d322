import { describe, expect, it } from "vitest";
import type { ResponseSink } from "../../src/server/rest/http-response.js";
import { JsonLinesWriter } from "../../src/server/rest/json-lines-writer.js";

/** A response that records each write and whether the socket took it. */
function recordingResponse(takesMore = true) {
  const writes: string[] = [];
  let ended: string | undefined;
  const listeners = new Map<string, () => void>();
  const res: ResponseSink = {
    statusCode: 200,
    headersSent: false,
    get writableEnded() {
      return ended !== undefined;
    },
    setHeader: () => undefined,
    writeHead: () => undefined,
    write: (chunk: string) => (writes.push(chunk), takesMore),
    end: (chunk?: string | Buffer) => (ended = String(chunk ?? "")),
    once: (event: string, listener: () => void) => listeners.set(event, listener),
    off: (event: string) => listeners.delete(event),
  };
  return { res, writes, ended: () => ended, drain: () => listeners.get("drain")?.() };
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("the json-lines writer", () => {
  it("writes the lines of one turn together, and each later turn's in a write of its own", async () => {
    const { res, writes, ended } = recordingResponse();
    const writer = new JsonLinesWriter(res, new AbortController().signal, {});
    await writer.writeLine({ a: 1 });
    await writer.writeLine({ b: 2 });
    await turn();
    await writer.writeLine({ c: 3 });
    await turn();
    await writer.writeLine({ d: 4 });
    writer.end();
    expect(writes).toEqual(['{"a":1}\n{"b":2}\n', '{"c":3}\n']);
    expect(ended()).toBe('{"d":4}\n');
  });

  it("holds the next line until a full socket drains", async () => {
    const { res, writes, drain } = recordingResponse(false);
    const writer = new JsonLinesWriter(res, new AbortController().signal, {});
    await writer.writeLine({ a: 1 });
    await turn();
    let written = false;
    const next = writer.writeLine({ b: 2 }).then(() => (written = true));
    await turn();
    expect(written).toBe(false);
    drain();
    await next;
    expect(writes).toEqual(['{"a":1}\n', '{"b":2}\n']);
  });

  it("writes nothing more once the client has gone", async () => {
    const { res, writes } = recordingResponse();
    const gone = new AbortController();
    const writer = new JsonLinesWriter(res, gone.signal, {});
    await writer.writeLine({ a: 1 });
    gone.abort();
    await turn();
    expect(writes).toEqual([]);
  });
});
