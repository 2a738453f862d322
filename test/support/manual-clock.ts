import type { Clock } from "../../src/operations/clock.js";

/** A clock that moves only when told: time-dependent behaviour tested without sleeping. */
export interface ManualClock extends Clock {
  advance(ms: number): void;
  set(time: Date): void;
}

export function manualClock(start = new Date()): ManualClock {
  let now = start.getTime();
  return {
    now: () => new Date(now),
    advance: (ms) => void (now += ms),
    set: (time) => void (now = time.getTime()),
  };
}
