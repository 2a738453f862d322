import { describe, expect, it } from "vitest";
import { EventStreamUsage } from "../../src/inference/event-stream-usage.js";

const chunk = (content: string) => `data: ${JSON.stringify({ object: "chat.completion.chunk", choices: [{ index: 0, delta: { content } }], usage: null })}\n\n`;
const usageChunk = `data: ${JSON.stringify({ object: "chat.completion.chunk", choices: [], usage: { prompt_tokens: 9, completion_tokens: 4, total_tokens: 13 } })}\n\n`;
const done = "data: [DONE]\n\n";

/** Everything passed on, feeding `pieces` one at a time. */
function relay(scanner: EventStreamUsage, pieces: string[]): string {
  const passed = pieces.map((piece) => scanner.push(Buffer.from(piece))?.toString() ?? "");
  return passed.join("") + (scanner.end()?.toString() ?? "");
}

describe("reading a stream's usage as it passes", () => {
  it("passes every byte on unchanged and reads the usage chunk the client asked for", () => {
    const stream = [chunk("one"), chunk(" two"), usageChunk, done];
    const scanner = new EventStreamUsage(false);
    expect(relay(scanner, stream)).toBe(stream.join(""));
    expect(scanner.usage).toEqual({ promptTokens: 9, completionTokens: 4, totalTokens: 13 });
  });

  it("leaves out the usage chunk Axon asked for on the client's behalf, and nothing else", () => {
    const scanner = new EventStreamUsage(true);
    expect(relay(scanner, [chunk("one"), usageChunk + done])).toBe(chunk("one") + done);
    expect(scanner.usage?.totalTokens).toBe(13);
  });

  it("holds an event split across pieces until it is whole, wherever the pieces are cut", () => {
    const whole = [chunk("a"), chunk("b"), usageChunk, done].join("");
    for (let cut = 1; cut < whole.length; cut += 7) {
      const scanner = new EventStreamUsage(true);
      const passed = relay(scanner, [whole.slice(0, cut), whole.slice(cut)]);
      expect(passed).toBe(chunk("a") + chunk("b") + done);
      expect(scanner.usage?.totalTokens).toBe(13);
    }
  });

  it("reads events ended by CRLF line breaks too", () => {
    const crlf = (text: string) => text.replaceAll("\n", "\r\n");
    const scanner = new EventStreamUsage(true);
    expect(relay(scanner, [crlf(chunk("x")), crlf(usageChunk), crlf(done)])).toBe(crlf(chunk("x")) + crlf(done));
    expect(scanner.usage?.promptTokens).toBe(9);
  });

  it("passes on an unterminated last event when the upstream ends", () => {
    const scanner = new EventStreamUsage(false);
    expect(relay(scanner, [chunk("x"), "data: [DONE]"])).toBe(`${chunk("x")}data: [DONE]`);
  });

  it("finds no usage in a stream without one", () => {
    const scanner = new EventStreamUsage(false);
    relay(scanner, [chunk("x"), done]);
    expect(scanner.usage).toBeUndefined();
  });
});
