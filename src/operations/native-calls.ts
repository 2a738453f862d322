import type { JsonObject } from "@bufbuild/protobuf";

// TEMPORARY stand-in on the inference branch for the lead's NativeCalls (see /work/wt/NATIVE-CALLS.md), so that the
// /v1 routes build and their allow path runs until main's lands; merging main replaces this file whole. It decides
// nothing: every call is allowed.

/** One call on a native route, as policy and the operator see it. No secret may appear in any field. */
export interface NativeCall {
  clientId: string;
  operation: string;
  target: JsonObject;
  detail: JsonObject;
  summary: string;
  attributes?: Record<string, number>;
}

export type NativeOutcome = { ok: true; detail?: JsonObject } | { ok: false; code: string; message: string; detail?: JsonObject };

export type Allowed = {
  effect: "allowed";
  via: { rule: string } | { grant: string } | { approval: string };
  arguments: JsonObject;
  finish(outcome: NativeOutcome): Promise<void>;
};
export type Refused = { effect: "refused"; code: string; message: string; rule?: string; reason?: string };
export type Pending = { effect: "pending"; requestId: string };

export class NativeCalls {
  hold(call: NativeCall, _options: { signal: AbortSignal; onHeld?: (requestId: string) => void }): Promise<Allowed | Refused> {
    return Promise.resolve(this.allowed(call));
  }

  request(call: NativeCall): Promise<Allowed | Refused | Pending> {
    return Promise.resolve(this.allowed(call));
  }

  private allowed(call: NativeCall): Allowed {
    return { effect: "allowed", via: { rule: "stand-in" }, arguments: call.detail, finish: () => Promise.resolve() };
  }
}
