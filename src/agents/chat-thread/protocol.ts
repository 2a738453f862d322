import type { JsonObject } from "@bufbuild/protobuf";
import type { Config } from "../../config.js";
import type { Code } from "../../errors.js";
import type { ChatFilter_ChatFilterType as ChatFilterType } from "../../gen/neuro_san/api/grpc/agent_pb.js";
import type { LlmCallRecord } from "../../telemetry/llm-calls.js";
import type { HeldToolCall, ToolCallDecision, ToolCallOutcome } from "../tool-call-holds.js";
import type { DeployedNetwork, TemporaryDeployment, TemporaryNetworkSpec } from "../temporary-networks.js";

/*
 * The messages between the chat thread's runner (on the serving event loop) and the thread, posted in batches
 * (arrays, see batches.ts). Every message about a chat carries the id the runner gave it. Protobuf messages cross as
 * their binary encoding, which is exact; the rest is structured-cloned JSON.
 */

export interface ChatThreadSettings {
  /** What the thread reads of the server's configuration: manifest, tool path, info files, limits. */
  config: Config;
  /** The level of the server's logger: the thread sends only the records that pass it. */
  logLevel: string;
}

/** Runner → thread. */
export type Instruction =
  | {
      kind: "start";
      id: number;
      /** The served network, looked up again in the thread's own registry. */
      network: string;
      text: string;
      mimeData: Uint8Array[];
      slyData: JsonObject;
      chatContext: Uint8Array | undefined;
      metadata: Record<string, string>;
      /** The calling RPC's trace (W3C headers), when tracing is on: the chat's spans join it. */
      trace: Record<string, string> | undefined;
      clientId: string | undefined;
      /** Only the messages this filter lets through cross back; absent, all. */
      filter: ChatFilterType | undefined;
    }
  | { kind: "cancel"; id: number }
  /** A held tool call waits for an operator, on the request `requestId`. */
  | { kind: "hold-pending"; hold: number; requestId: string }
  /** A held tool call was decided. */
  | { kind: "held"; hold: number; decision: WireDecision }
  /** The temporary networks to serve from now on, beside the manifest's (the whole set, each time it changes). */
  | { kind: "temporary-networks"; networks: TemporaryNetworkSpec[] }
  /** The answer to a `deploy-temporary-networks` report: what was deployed (and is served by then), or why not. */
  | { kind: "temporary-networks-deployed"; request: number; networks: DeployedNetwork[] }
  | { kind: "temporary-networks-refused"; request: number; error: WireError }
  /** The server is stopping: the thread ends what it owns outside itself (Python workers), then says `closed`. */
  | { kind: "close" };

/** Thread → runner. */
export type Report =
  /** The thread has loaded its registry and takes chats (its first message), or could not. */
  | { kind: "ready" }
  | { kind: "unready"; error: WireError }
  | { kind: "closed" }
  /** The turn was accepted: messages follow. Or it was refused before any. */
  | { kind: "started"; id: number }
  | { kind: "refused"; id: number; error: WireError }
  | { kind: "message"; id: number; message: Uint8Array }
  | { kind: "ended"; id: number }
  | { kind: "failed"; id: number; error: WireError }
  /** A tool call to hold for an operator's decision (the broker lives on the serving loop); `hold` numbers it. */
  | { kind: "hold"; hold: number; call: HeldToolCall }
  /** The chat that held it was cancelled: the request is withdrawn. */
  | { kind: "withdraw"; hold: number }
  /** An approved tool call ran: how it went. */
  | { kind: "hold-finished"; hold: number; outcome: ToolCallOutcome }
  /** A coded tool's Reservationist deploys networks: the server keeps them in its database (the thread has none). */
  | { kind: "deploy-temporary-networks"; request: number; owner: string; deployments: TemporaryDeployment[] }
  /** A model call the thread made, for the server's GenAI metrics. */
  | { kind: "llm-call"; record: LlmCallRecord }
  /** A log record of the thread, as pino serialized it, for the server's logger. */
  | { kind: "log"; record: string };

/** A decision as it crosses: an approval's `finish` stays on the serving loop, reached by `hold-finished`. */
export type WireDecision = { approved: true; arguments: JsonObject } | Exclude<ToolCallDecision, { approved: true }>;

/** An error as it crosses: an AxonError keeps what the status mapper reads; anything else its name and message. */
export type WireError =
  | {
      axon: true;
      code: Code;
      reason: string;
      message: string;
      metadata: Record<string, string>;
      fieldViolations: { field: string; description: string }[];
      retryAfterSeconds: number | undefined;
      quotaViolations: { subject: string; description: string }[];
    }
  | { axon: false; name: string; message: string };
