import http, { type IncomingMessage } from "node:http";
import https from "node:https";
import { Code } from "@connectrpc/connect";
import { AxonError } from "../errors.js";
import { isJsonObject } from "../json.js";
import { sanitizeProviderText } from "../operations/sanitize.js";
import { drained, eventStreamHeaders, writeErrorAnswer, type AnswerSink } from "./answers.js";
import type { ChatRequest } from "./chat-request.js";
import { EventStreamUsage } from "./event-stream-usage.js";
import { openAiErrorOf, typeOfStatus, type OpenAiError } from "./openai-errors.js";
import { usageIn, type TokenUsage } from "./token-usage.js";
import { chatUrl, type Upstream } from "./upstreams.js";

/** What became of one relayed call, for the audit, the token count and the log line. */
export interface RelayOutcome {
  /** The upstream's status; 0 when it never answered. */
  status: number;
  usage: TokenUsage | undefined;
  /** Body bytes passed to the client. */
  bytes: number;
  /** Why it failed, when the upstream could not be reached or broke off (never the upstream's own text). */
  failure?: string;
}

// Connections to the upstreams are kept open between calls, as every HTTP client of an API does.
const agents = { "http:": new http.Agent({ keepAlive: true }), "https:": new https.Agent({ keepAlive: true }) };
/** An upstream error body beyond this is not read: only its message is shown, sanitized. */
const maxErrorBytes = 64 * 1024;
/** The upstream's headers a client may see: its own retry advice. */
const passedHeaders = ["retry-after", "retry-after-ms"];

/**
 * Sends a chat completion to its upstream with the upstream's key and streams the answer back as it arrives: the
 * upstream's bytes, with backpressure both ways (a slow client pauses the upstream). Only the usage is read from them.
 * An upstream error is answered in OpenAI's shape with the upstream's status, its message sanitized of the key; the
 * upstream refusing Axon's own key is a 502, not the client's 401.
 */
export function relayChatCompletion(options: {
  upstream: Upstream;
  secret: string;
  request: ChatRequest;
  res: AnswerSink;
  headers: Record<string, string>;
  /**
   * Awaited with the outcome before the answer ends (not when the client left or the upstream broke off mid-answer):
   * what the outcome changes (an upstream failure's grant use given back) is in place once the client has the answer.
   */
  beforeEnd?: (outcome: RelayOutcome) => Promise<void>;
}): Promise<RelayOutcome> {
  const { upstream, secret, request, res, headers } = options;
  // A failure to record is the caller's to see (its own call to record again returns it): the answer still ends.
  const beforeEnd = async (outcome: RelayOutcome) => options.beforeEnd?.(outcome).catch(() => undefined);
  // Asked for on the client's behalf, so that a stream's tokens are counted; the usage chunk is then not passed on.
  const askUsage = request.stream && upstream.streamUsage && !request.includeUsage;
  const body = askUsage
    ? Buffer.from(JSON.stringify({ ...request.body, stream_options: { ...(isJsonObject(request.body.stream_options) ? request.body.stream_options : {}), include_usage: true } }))
    : request.raw;
  const target = targetOf(upstream, request.model);
  const outgoing: Record<string, string> = {
    "content-type": "application/json",
    "content-length": String(body.byteLength),
    accept: request.stream ? "text/event-stream" : "application/json",
    "user-agent": "axon",
    [upstream.header]: upstream.scheme === undefined ? secret : `${upstream.scheme} ${secret}`,
  };

  return new Promise<RelayOutcome>((resolve) => {
    const outcome: RelayOutcome = { status: 0, usage: undefined, bytes: 0 };
    let settled = false;
    const settle = (failure?: string) => {
      if (settled) return;
      settled = true;
      res.off("close", onClose);
      if (failure !== undefined) outcome.failure = failure;
      resolve(outcome);
    };
    const call = target.transport.request({ ...target.options, method: "POST", headers: outgoing });
    // The client leaving ends the upstream's call (a response closed before it finished).
    const onClose = () => {
      if (res.writableFinished) return;
      call.destroy();
      settle("the client left");
    };
    res.once("close", onClose);
    call.setTimeout(upstream.idleTimeoutSeconds * 1000, () => call.destroy(new Error("idle timeout")));
    call.on("error", (error: NodeJS.ErrnoException) => {
      if (settled) return;
      const failure = error.message === "idle timeout" ? "the upstream stayed silent too long" : "the upstream could not be reached";
      // The log line says how (ECONNREFUSED, ENOTFOUND): a code, never a host or a key.
      outcome.failure = error.code === undefined ? failure : `${failure} (${error.code})`;
      void beforeEnd(outcome).then(() => {
        writeErrorAnswer(res, upstreamFailure(upstream, failure), headers);
        settle(outcome.failure);
      });
    });
    call.on("response", (answer) => {
      outcome.status = answer.statusCode ?? 0;
      if (outcome.status < 200 || outcome.status > 299) {
        return void relayError(answer, outcome.status, secret, upstream).then(async (shaped) => {
          await beforeEnd(outcome);
          writeErrorAnswer(res, shaped, headers);
          settle();
        });
      }
      const eventStream = (answer.headers["content-type"] ?? "").startsWith("text/event-stream");
      res.writeHead(outcome.status, eventStream ? eventStreamHeaders(headers) : { "content-type": "application/json", ...headers });
      const events = eventStream ? new EventStreamUsage(askUsage) : undefined;
      const json: Buffer[] = [];
      const pass = (bytes: Buffer | undefined) => {
        if (bytes === undefined || bytes.byteLength === 0) return;
        outcome.bytes += bytes.byteLength;
        if (!res.write(bytes) && !res.destroyed) {
          answer.pause();
          void drained(res).then(() => answer.resume());
        }
      };
      answer.on("data", (piece: Buffer) => {
        if (events) return pass(events.push(piece));
        json.push(piece);
        pass(piece);
      });
      answer.on("end", () => {
        if (events) {
          pass(events.end());
          outcome.usage = events.usage;
        } else {
          outcome.usage = usageIn(json.length === 1 ? json[0]! : Buffer.concat(json));
        }
        void beforeEnd(outcome).then(() => {
          res.end();
          settle();
        });
      });
      answer.on("error", () => undefined);
      answer.on("close", () => {
        if (answer.complete || settled) return;
        // Headers are out: a stream says so in an error event, a JSON body can only be cut.
        if (events) writeErrorAnswer(res, upstreamFailure(upstream, "the upstream broke off its answer"));
        else res.destroy();
        settle("the upstream broke off its answer");
      });
    });
    call.end(body);
  });
}

/** The upstream's error in OpenAI's shape, its text sanitized; its own key refused is Axon's failure, not the client's. */
async function relayError(answer: IncomingMessage, status: number, secret: string, upstream: Upstream): Promise<OpenAiError> {
  const pieces: Buffer[] = [];
  let size = 0;
  try {
    for await (const piece of answer as AsyncIterable<Buffer>) {
      size += piece.byteLength;
      if (size > maxErrorBytes) break;
      pieces.push(piece);
    }
  } catch {
    // What arrived is all there is to go on.
  }
  if (status === 401 || status === 403) {
    return upstreamFailure(upstream, `the upstream refused the key Axon holds for it (HTTP ${status})`);
  }
  const found = parsed(Buffer.concat(pieces));
  const error = isJsonObject(found) && isJsonObject(found.error) ? found.error : {};
  const text = (value: unknown) => (typeof value === "string" && value !== "" ? sanitizeProviderText(value, { secrets: [secret] }) : undefined);
  const passed: Record<string, string> = {};
  for (const name of passedHeaders) {
    const value = answer.headers[name];
    if (typeof value === "string" && /^[0-9.]{1,12}$/.test(value)) passed[name] = value;
  }
  return {
    status,
    error: {
      message: text(error.message) ?? `the upstream answered HTTP ${status}`,
      type: text(error.type) ?? typeOfStatus(status),
      code: text(error.code) ?? null,
      param: text(error.param) ?? null,
    },
    headers: passed,
  };
}

/** How to reach an upstream for a model: the URL as request options, made once per upstream when its path names no model. */
interface RequestTarget {
  transport: typeof http | typeof https;
  options: http.RequestOptions;
}

const fixedTargets = new WeakMap<Upstream, RequestTarget>();

function targetOf(upstream: Upstream, model: string): RequestTarget {
  const fixed = !upstream.chatPath.includes("{model}");
  let target = fixed ? fixedTargets.get(upstream) : undefined;
  if (target === undefined) {
    const url = chatUrl(upstream, model);
    const secure = url.protocol === "https:";
    target = {
      transport: secure ? https : http,
      options: { hostname: url.hostname.replace(/^\[|\]$/g, ""), port: url.port || (secure ? 443 : 80), path: url.pathname + url.search, agent: agents[secure ? "https:" : "http:"] },
    };
    if (fixed) fixedTargets.set(upstream, target);
  }
  return target;
}

function upstreamFailure(upstream: Upstream, message: string): OpenAiError {
  return openAiErrorOf(new AxonError(Code.Unavailable, "UPSTREAM_FAILED", message, { metadata: { upstream: upstream.name } }));
}

function parsed(bytes: Buffer): unknown {
  try {
    return JSON.parse(bytes.toString("utf8"));
  } catch {
    return undefined;
  }
}
