import { AxonError } from "../../errors.js";
import type { WireError } from "./protocol.js";

/** What of an error crosses to the serving loop: for an AxonError, everything the status mapper reads. */
export function toWireError(error: unknown): WireError {
  if (error instanceof AxonError) {
    const { code, reason, message, metadata, fieldViolations, retryAfterSeconds, quotaViolations } = error;
    return { axon: true, code, reason, message, metadata, fieldViolations, retryAfterSeconds, quotaViolations };
  }
  if (error instanceof Error) return { axon: false, name: error.name, message: error.message };
  return { axon: false, name: "Error", message: String(error) };
}

export function fromWireError(wire: WireError): Error {
  if (!wire.axon) return Object.assign(new Error(wire.message), { name: wire.name });
  const { code, reason, message, metadata, fieldViolations, retryAfterSeconds, quotaViolations } = wire;
  return new AxonError(code, reason, message, {
    metadata,
    fieldViolations,
    quotaViolations,
    ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds }),
  });
}
