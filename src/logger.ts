import { pino, type DestinationStream, type Logger } from "pino";

export type { Logger };

/** The one logger: JSON lines (stdout unless told otherwise), one child per request carrying its request id. */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino({ level, base: { service: "axon" }, timestamp: pino.stdTimeFunctions.isoTime }, destination);
}
