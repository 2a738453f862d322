import http from "node:http";
import { performance } from "node:perf_hooks";
import { chatError } from "./chat-check.js";
import { KeepAliveHttpClient, RawGrpcClient, type HttpRequestSpec } from "./clients.js";
import type { Call } from "./load.js";

/*
 * The three kinds of traffic `npm run bench:load` sends, each spread over one or more Axon replicas: List over gRPC,
 * crowds of streaming chats opened all at once, and Agent Operations submitted then long-polled to their end.
 */

export interface Origin {
  host: string;
  port: number;
}

export const listMethod = "/dev.cognizant_ai.neuro_san.api.grpc.concierge.ConciergeService/List";

/** ConciergeService.List over gRPC (raw bytes, so the client does no protobuf work), round-robin over the replicas. */
export function listCaller(clients: RawGrpcClient[]): Call {
  const empty = Buffer.alloc(0); // ConciergeRequest has no fields set.
  let next = 0;
  return async () => void (await clients[next++ % clients.length]!.unary(listMethod, empty));
}

export interface ChatTiming {
  /** From sending the request to the end of the first json-line. */
  firstMessageMs: number;
  /** From sending the request to the end of the stream. */
  totalMs: number;
}

export interface CrowdResult {
  timings: ChatTiming[];
  errors: number;
  firstError?: string;
  /** When each failed chat failed, from its request, sorted: tells a timeout from an overload. */
  errorsAfterMs: number[];
  seconds: number;
}

/**
 * Chats opened `size` at a time, every one on its own keep-alive socket so all of them are open at once, spread
 * evenly over the replicas. Each is checked as `bench:chat` checks it: HTTP 200, the probe's number of messages,
 * and a last message that is the final answer.
 */
export class ChatCrowd {
  private readonly agents: http.Agent[];

  constructor(
    private readonly origins: Origin[],
    private readonly request: HttpRequestSpec,
    private readonly messages: number,
    private readonly size: number,
  ) {
    this.agents = origins.map(() => new http.Agent({ keepAlive: true, maxSockets: size }));
  }

  /** `waves` times: open `size` chats at once and wait until every one has ended. */
  async run(waves: number): Promise<CrowdResult> {
    const timings: ChatTiming[] = [];
    const errorsAfterMs: number[] = [];
    let firstError: string | undefined;
    const started = performance.now();
    for (let wave = 0; wave < waves; wave++) {
      const chats = Array.from({ length: this.size }, async (_, index) => {
        const sent = performance.now();
        try {
          timings.push(await this.chat(index % this.origins.length));
        } catch (error) {
          errorsAfterMs.push(performance.now() - sent);
          firstError ??= String(error);
        }
      });
      await Promise.all(chats);
    }
    errorsAfterMs.sort((a, b) => a - b);
    return { timings, errors: errorsAfterMs.length, errorsAfterMs, ...(firstError ? { firstError } : {}), seconds: (performance.now() - started) / 1000 };
  }

  close(): void {
    for (const agent of this.agents) agent.destroy();
  }

  private chat(replica: number): Promise<ChatTiming> {
    const { request: spec, messages } = this;
    return new Promise((resolve, reject) => {
      const sent = performance.now();
      let firstMessageMs: number | undefined;
      const request = http.request(
        { ...this.origins[replica]!, agent: this.agents[replica], method: spec.method, path: spec.path, headers: spec.headers, timeout: 120_000 },
        (response) => {
          const chunks: Buffer[] = [];
          response.on("data", (chunk: Buffer) => {
            // json-lines: the first message has arrived when the first line has ended.
            if (firstMessageMs === undefined && chunk.includes(10)) firstMessageMs = performance.now() - sent;
            chunks.push(chunk);
          });
          response.on("error", reject);
          response.on("end", () => {
            const totalMs = performance.now() - sent;
            const lines = Buffer.concat(chunks).toString("utf8").split("\n").filter((line) => line !== "");
            let error: string | undefined;
            try {
              error = chatError(response.statusCode ?? 0, lines) ?? (lines.length === messages ? undefined : `${lines.length} messages, expected ${messages}`);
            } catch (parseError) {
              error = `unreadable last line: ${String(parseError)}`;
            }
            if (error) reject(new Error(error));
            else resolve({ firstMessageMs: firstMessageMs ?? totalMs, totalMs });
          });
        },
      );
      // A chat that stops streaming would otherwise hold its wave, and the run, forever.
      request.on("timeout", () => request.destroy(new Error("no bytes for 120 s")));
      request.on("error", reject);
      request.end(spec.body);
    });
  }
}

const terminalStates = new Set(["succeeded", "failed", "denied", "expired", "canceled"]);

interface OperationJson {
  id?: string;
  state?: string;
  revision?: number;
  error?: { code?: string; message?: string };
}

/**
 * Agent Operations: submit an `agent.chat` operation (allowed by the policy, so it executes at once), then long-poll
 * `WaitOperation` over REST until it is terminal; a call succeeds when the operation did. With several replicas an
 * operation is submitted to one and waited on the next, so every wait must be woken by another replica's change.
 */
export class OperationTraffic {
  /** Every successful submit's latency (the HTTP round trip of the submit alone), in arrival order. */
  readonly submitMs: number[] = [];
  /** Submits answered 200/202, i.e. operations the database must hold. */
  accepted = 0;
  waits = 0;
  private readonly clients: KeepAliveHttpClient[];
  private sequence = 0;

  constructor(
    origins: Origin[],
    private readonly secret: string,
    private readonly keyPrefix: string,
    private readonly body: (idempotencyKey: string) => Record<string, unknown>,
    concurrency: number,
  ) {
    this.clients = origins.map((origin) => new KeepAliveHttpClient(origin, concurrency));
  }

  /** Starts a new record of submit latencies and waits (the `accepted` count runs on). */
  reset(): void {
    this.submitMs.length = 0;
    this.waits = 0;
    this.failures.length = 0;
  }

  /** The first few failures, for the report: a count alone cannot tell a timeout from a failed execution. */
  readonly failures: string[] = [];

  readonly call: Call = async () => {
    try {
      await this.submitAndWait();
    } catch (error) {
      if (this.failures.length < 5) this.failures.push(String(error));
      throw error;
    }
  };

  private async submitAndWait(): Promise<void> {
    const number = this.sequence++;
    const submitTo = this.clients[number % this.clients.length]!;
    const waitOn = this.clients[(number + 1) % this.clients.length]!;
    const headers = { authorization: `Bearer ${this.secret}`, "content-type": "application/json" };
    const sent = performance.now();
    const reply = await submitTo.send({
      method: "POST",
      path: "/api/agent/v1/operations",
      headers,
      body: Buffer.from(JSON.stringify(this.body(`${this.keyPrefix}-${number}`))),
    });
    if (reply.status !== 200 && reply.status !== 202) throw new Error(`submit: HTTP ${reply.status}: ${reply.body.toString().slice(0, 300)}`);
    this.accepted++;
    this.submitMs.push(performance.now() - sent);
    let operation = JSON.parse(reply.body.toString()) as OperationJson;
    while (!terminalStates.has(operation.state ?? "")) {
      this.waits++;
      const waited = await waitOn.send({
        method: "GET",
        path: `/api/agent/v1/operations/${operation.id}/events?after_revision=${operation.revision}&wait_seconds=30`,
        headers: { authorization: headers.authorization },
      });
      if (waited.status !== 200) throw new Error(`wait: HTTP ${waited.status}: ${waited.body.toString().slice(0, 300)}`);
      operation = JSON.parse(waited.body.toString()) as OperationJson;
    }
    if (operation.state !== "succeeded") throw new Error(`operation ${operation.id} ended ${operation.state}: ${JSON.stringify(operation.error ?? {})}`);
  }

  close(): void {
    for (const client of this.clients) client.close();
  }
}
