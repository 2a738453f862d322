import type { HeldToolCall, ToolCallDecision, ToolCallHolds } from "../tool-call-holds.js";
import type { Instruction, Report } from "./protocol.js";

type Waiting = { resolve(decision: ToolCallDecision): void; onHeld(requestId: string): void };

/**
 * The chat thread's way to the broker: each held tool call crosses to the serving loop (where NativeCalls decides it)
 * as a `hold` report, and comes back as a `held` instruction.
 */
export class ThreadHolds implements ToolCallHolds {
  private lastHold = 0;
  private readonly waiting = new Map<number, Waiting>();

  constructor(private readonly send: (report: Report) => void) {}

  hold(call: HeldToolCall, signal: AbortSignal, onHeld: (requestId: string) => void): Promise<ToolCallDecision> {
    signal.throwIfAborted();
    const hold = ++this.lastHold;
    return new Promise((resolve) => {
      const withdraw = () => this.send({ kind: "withdraw", hold });
      signal.addEventListener("abort", withdraw, { once: true });
      this.waiting.set(hold, {
        resolve: (decision) => {
          signal.removeEventListener("abort", withdraw);
          resolve(decision);
        },
        onHeld,
      });
      this.send({ kind: "hold", hold, call });
    });
  }

  /** A `hold-pending` or `held` instruction from the serving loop. */
  answer(instruction: Extract<Instruction, { kind: "hold-pending" | "held" }>): void {
    const waiting = this.waiting.get(instruction.hold);
    if (waiting === undefined) return;
    if (instruction.kind === "hold-pending") return waiting.onHeld(instruction.requestId);
    this.waiting.delete(instruction.hold);
    const { decision } = instruction;
    if (!decision.approved) return waiting.resolve(decision);
    const { hold } = instruction;
    waiting.resolve({ approved: true, arguments: decision.arguments, finish: (outcome) => this.send({ kind: "hold-finished", hold, outcome }) });
  }
}
