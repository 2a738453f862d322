import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Batches } from "../../../src/agents/chat-thread/batches.js";

describe("batches across the chat thread", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  const recorder = () => {
    const posted: string[][] = [];
    return { posted, batches: new Batches<string>((batch) => posted.push(batch), 1000) };
  };

  it("posts what one turn pushed as one batch, in order", () => {
    const { posted, batches } = recorder();
    batches.push("a");
    batches.push("b");
    expect(posted).toEqual([]);
    vi.runOnlyPendingTimers();
    batches.push("c");
    vi.runOnlyPendingTimers();
    expect(posted).toEqual([["a", "b"], ["c"]]);
  });

  it("sends a late message with the next batch, in the order pushed", () => {
    const { posted, batches } = recorder();
    batches.pushLate("count");
    vi.advanceTimersByTime(500);
    expect(posted).toEqual([]);
    batches.push("message");
    vi.advanceTimersByTime(0);
    expect(posted).toEqual([["count", "message"]]);
    vi.advanceTimersByTime(2000);
    expect(posted).toHaveLength(1);
  });

  it("sends a late message alone once its wait is over", () => {
    const { posted, batches } = recorder();
    batches.pushLate("count");
    vi.advanceTimersByTime(999);
    expect(posted).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(posted).toEqual([["count"]]);
  });
});
