import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { JsonObject } from "@bufbuild/protobuf";
import { anthropicWire } from "./anthropic-wire.js";
import { bedrockWire } from "./bedrock-wire.js";
import { openAiWire } from "./openai-wire.js";
import { defaultReply, type Reply, type ScriptedRequest, type ScriptHandler } from "./script.js";
import { invalidToolSchema } from "./tool-schemas.js";
import { isObject, writeJson, type Wire } from "./wire.js";

export type { Reply, ScriptedRequest, ScriptHandler } from "./script.js";
export { defaultReply } from "./script.js";

export type ScriptedKind = "openai" | "anthropic" | "bedrock";

/** The key the scripted servers' `env` hands out; tests check that it never shows up in errors or logs. */
export const SCRIPTED_API_KEY = "sk-scripted-0123456789-secret";

/** Everything the server received, kept raw so tests can assert what was never sent. */
export interface RecordedRequest {
  path: string;
  /** The key the client sent (Authorization Bearer, x-api-key or api-key). */
  credential?: string;
  body: JsonObject;
  /** Normalized view of `body`. */
  request: ScriptedRequest;
  /** The client went away before the answer was complete. */
  aborted: boolean;
  /** The HTTP status answered (0 while held or in flight). */
  status: number;
  /** The W3C trace context the client sent, if any. */
  traceparent?: string;
}

const WIRES: Record<ScriptedKind, Wire> = { openai: openAiWire, anthropic: anthropicWire, bedrock: bedrockWire };

/** The AWS access key id the Bedrock stand-in's `env` hands out; its secret is SCRIPTED_API_KEY. */
export const SCRIPTED_AWS_ACCESS_KEY_ID = "AKIASCRIPTED0000TEST";

/**
 * A real HTTP server on 127.0.0.1 speaking OpenAI chat completions, Anthropic Messages or Bedrock's Converse, JSON
 * and streamed.
 * Answers come from, in order: failures queued by `failNext`, a `hold`, replies queued by `enqueue`, then the
 * script (`defaultReply` unless `script()` replaced it).
 */
export class ScriptedLlm {
  readonly requests: RecordedRequest[] = [];
  /** What `GET …/models` answers (OpenAI's wire only), and the key each listing came with. */
  models: string[] = [];
  readonly modelListings: { path: string; credential?: string }[] = [];
  private handler: ScriptHandler = defaultReply;
  private replies: Reply[] = [];
  private failures: { status: number; retryAfterMs: number }[] = [];
  private holds = 0;
  private listeners: (() => boolean)[] = [];

  private constructor(
    readonly kind: ScriptedKind,
    private readonly server: Server,
    /** `http://127.0.0.1:<port>` */
    readonly url: string,
    private readonly latencyMs: number,
    private readonly validatesToolSchemas: boolean,
  ) {}

  /** `validateToolSchemas` (OpenAI only): refuse tools whose parameters are not JSON Schema, with OpenAI's 400. */
  static async start(kind: ScriptedKind, options: { latencyMs?: number; validateToolSchemas?: boolean } = {}): Promise<ScriptedLlm> {
    const server = createServer();
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const { port } = server.address() as AddressInfo;
    const scripted = new ScriptedLlm(kind, server, `http://127.0.0.1:${port}`, options.latencyMs ?? 0, options.validateToolSchemas === true && kind === "openai");
    server.on("request", (request, response) => void scripted.serve(request, response));
    return scripted;
  }

  /** What the SDKs take as base URL: OpenAI's includes `/v1`, Anthropic's does not. */
  get baseUrl(): string {
    return this.kind === "openai" ? `${this.url}/v1` : this.url;
  }

  /** Environment variables that point Axon's LLM layer at this server. */
  get env(): Record<string, string> {
    switch (this.kind) {
      case "openai":
        return { OPENAI_API_KEY: SCRIPTED_API_KEY, OPENAI_BASE_URL: this.baseUrl };
      case "anthropic":
        return { ANTHROPIC_API_KEY: SCRIPTED_API_KEY, ANTHROPIC_BASE_URL: this.baseUrl };
      case "bedrock":
        return {
          AWS_ACCESS_KEY_ID: SCRIPTED_AWS_ACCESS_KEY_ID,
          AWS_SECRET_ACCESS_KEY: SCRIPTED_API_KEY,
          AWS_REGION: "us-east-1",
          AWS_ENDPOINT_URL_BEDROCK_RUNTIME: this.url,
        };
    }
  }

  /** Replaces the script for every later request (until `reset`). */
  script(handler: ScriptHandler): void {
    this.handler = handler;
  }

  /** Answers the next requests with these replies, in order, before the script is consulted again. */
  enqueue(...replies: Reply[]): void {
    this.replies.push(...replies);
  }

  /** The next `times` requests fail with `status`; `retry-after-ms` keeps the SDKs' retries fast. */
  failNext(status: number, times = 1, options: { retryAfterMs?: number } = {}): void {
    for (let i = 0; i < times; i++) this.failures.push({ status, retryAfterMs: options.retryAfterMs ?? 1 });
  }

  /** The next request gets no answer: it hangs until the client aborts it. */
  hold(): void {
    this.holds++;
  }

  /** Resolves once `count` requests have arrived. */
  whenReceived(count = 1): Promise<RecordedRequest> {
    return this.waitFor(() => this.requests[count - 1]);
  }

  /** Resolves with the `count`-th request the client aborted. */
  whenAborted(count = 1): Promise<RecordedRequest> {
    return this.waitFor(() => this.requests.filter((request) => request.aborted)[count - 1]);
  }

  reset(): void {
    this.requests.length = 0;
    this.modelListings.length = 0;
    this.handler = defaultReply;
    this.replies = [];
    this.failures = [];
    this.holds = 0;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    this.server.close();
    await once(this.server, "close");
  }

  private async serve(incoming: IncomingMessage, response: ServerResponse): Promise<void> {
    const wire = WIRES[this.kind];
    const path = incoming.url ?? "/";
    if (this.kind === "openai" && incoming.method === "GET" && new URL(path, this.url).pathname.endsWith("/models")) {
      const credential = wire.credential(incoming.headers);
      this.modelListings.push({ path, ...(credential === undefined ? {} : { credential }) });
      writeJson(response, 200, { object: "list", data: this.models.map((id) => ({ id, object: "model", created: 1700000000, owned_by: "scripted" })) });
      return;
    }
    if (incoming.method !== "POST" || !wire.matches(new URL(path, this.url).pathname)) {
      writeJson(response, 404, wire.errorBody(404));
      return;
    }
    let body: JsonObject;
    try {
      const parsed: unknown = JSON.parse(await readBody(incoming));
      if (!isObject(parsed)) throw new Error("not an object");
      body = parsed;
    } catch {
      writeJson(response, 400, wire.errorBody(400));
      return;
    }
    const request = wire.parse(body, new URL(path, this.url).pathname);
    const credential = wire.credential(incoming.headers);
    const recorded: RecordedRequest = {
      path,
      ...(credential === undefined ? {} : { credential }),
      body,
      request,
      aborted: false,
      status: 0,
      ...(typeof incoming.headers.traceparent === "string" ? { traceparent: incoming.headers.traceparent } : {}),
    };
    this.requests.push(recorded);
    const serial = this.requests.length;
    response.on("close", () => {
      // "close" without a finished response: the client hung up first.
      if (!response.writableFinished) recorded.aborted = true;
      this.notify();
    });
    this.notify();

    const invalid = this.validatesToolSchemas ? invalidToolSchema(body) : undefined;
    if (invalid !== undefined) {
      recorded.status = 400;
      writeJson(response, 400, invalid);
      return;
    }
    const failure = this.failures.shift();
    if (failure !== undefined) {
      recorded.status = failure.status;
      writeJson(response, failure.status, wire.errorBody(failure.status, credential), {
        "retry-after-ms": String(failure.retryAfterMs),
        ...wire.errorHeaders?.(failure.status),
      });
      return;
    }
    if (this.holds > 0) {
      this.holds--;
      return; // never answered; the "close" listener records the abort
    }
    if (this.latencyMs > 0) await delay(this.latencyMs);
    if (response.destroyed) return;
    let reply: Reply;
    try {
      reply = this.replies.shift() ?? (await this.handler(request));
    } catch {
      recorded.status = 500;
      writeJson(response, 500, wire.errorBody(500));
      return;
    }
    if (response.destroyed) return;
    recorded.status = 200;
    wire.write(response, reply, request, body, serial);
  }

  private waitFor<T>(find: () => T | undefined): Promise<T> {
    return new Promise((resolve) => {
      const check = () => {
        const found = find();
        if (found === undefined) return false;
        resolve(found);
        return true;
      };
      if (!check()) this.listeners.push(check);
    });
  }

  private notify(): void {
    this.listeners = this.listeners.filter((check) => !check());
  }
}

async function readBody(incoming: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of incoming) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
