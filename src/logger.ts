import { pino, type Logger } from "pino";

export type { Logger };

/** The one logger: JSON lines on stdout, one child per request carrying its request id. */
export function createLogger(level: string): Logger {
  return pino({ level, base: { service: "axon" }, timestamp: pino.stdTimeFunctions.isoTime });
}
