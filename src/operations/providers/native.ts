import type { JsonObject } from "@bufbuild/protobuf";
import type { FieldViolation } from "../../errors.js";
import type { Presentation, Provider } from "./provider.js";

/** What a native route says of one of its operation types. */
export interface NativeOperation {
  operation: string;
  /** Field violations of a target (field paths like `target.owner`), for explicit grants asked for ahead of use. */
  validateTarget(target: JsonObject): FieldViolation[];
  /** What an operator is shown of a call: its target and the detail the route gave it. */
  present(target: JsonObject, detail: JsonObject): Presentation;
}

/**
 * The provider of an operation a native route executes itself: registered so that grants, presentation and
 * reconciliation treat it like any other, while the route, not the worker, runs it. After a restart nothing of an
 * interrupted native call can be proven: the upstream may have acted.
 */
export function nativeProvider(native: NativeOperation): Provider {
  return {
    operation: native.operation,
    native: true,
    validate: (target) => native.validateTarget(target),
    present: (target, detail) => native.present(target, detail),
    execute: () => Promise.reject(new Error(`${native.operation} is executed by its native route`)),
    reconcile: () => Promise.resolve(undefined),
  };
}
