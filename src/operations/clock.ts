/** The one clock of the operations lifecycle: injectable, so time-dependent behaviour is tested without sleeping. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };
