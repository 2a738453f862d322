import { randomUUID } from "node:crypto";
import { Code } from "@connectrpc/connect";
import type { ChatRunner } from "../agents/chat-runner.js";
import type { AgentRegistry } from "../agents/registry.js";
import type { NetworkAccess } from "../auth/network-access.js";
import { AxonError, notFound } from "../errors.js";
import type { Logger } from "../logger.js";
import type { NativeCalls } from "../operations/native-calls.js";
import { credentialsOf, type Authenticator } from "../server/authenticate.js";
import { headerIn, leavesUnreadBody, onClientGone } from "../server/http-request.js";
import type { HttpRequest, HttpResponse } from "../server/listener.js";
import type { Metrics } from "../server/metrics.js";
import { readRequestBody } from "../server/request-body.js";
import { sinkOf, writeErrorAnswer, writeJsonAnswer, type AnswerSink } from "./answers.js";
import { completeWithUpstream } from "./brokered-completion.js";
import { readChatRequest, refuseUnknownFields } from "./chat-request.js";
import type { Inference } from "./inference.js";
import { modelsFor } from "./model-list.js";
import { completeWithNetwork } from "./network-completion.js";
import { networkModelPrefix, networkOfModel } from "./network-models.js";
import { networkFields, networkTurnOf } from "./network-turn.js";
import { openAiErrorOf } from "./openai-errors.js";
import type { TokenUsage } from "./token-usage.js";

export interface InferenceRoutesOptions {
  inference: Inference;
  native: Pick<NativeCalls, "request">;
  authenticator: Pick<Authenticator, "client">;
  registry: Pick<AgentRegistry, "listPublic" | "listMcp" | "get">;
  chats: ChatRunner;
  access: NetworkAccess;
  metrics: Pick<Metrics, "inferenceCall">;
  logger: Logger;
  maxRequestBytes: number;
}

export interface InferenceRoutes {
  /** Answers a `/v1/` route and resolves true; resolves false for any other path. */
  handle(req: HttpRequest, res: HttpResponse): Promise<boolean>;
}

const modelsPath = "/v1/models";
const chatPath = "/v1/chat/completions";

/**
 * OpenAI's `/v1` on Axon's port, for OpenAI's own clients: `GET /v1/models` (and `/v1/models/{id}`) and
 * `POST /v1/chat/completions`, for brokered models and for agent networks (`axon/<network>`). The caller's Axon client
 * secret is its API key. Every answer, errors included, is in OpenAI's shape, since that is what these clients read.
 */
export function createInferenceRoutes(options: InferenceRoutesOptions): InferenceRoutes {
  const { inference, authenticator, logger } = options;

  async function listModels(res: AnswerSink, clientId: string, headers: Record<string, string>, id: string | undefined): Promise<void> {
    const models = await modelsFor(clientId, options);
    if (id === undefined) return writeJsonAnswer(res, 200, { object: "list", data: models }, headers);
    const model = models.find((candidate) => candidate.id === id);
    if (model === undefined) throw modelNotFound(id);
    writeJsonAnswer(res, 200, model, headers);
  }

  async function complete(req: HttpRequest, res: AnswerSink, clientId: string, call: CallRecord): Promise<void> {
    const request = readChatRequest(await readRequestBody(req, options.maxRequestBytes));
    call.model = request.model;
    call.stream = request.stream;
    const network = request.model.startsWith(networkModelPrefix) ? networkOfModel(options.registry, options.access, clientId, request.model) : undefined;
    const upstream = network === undefined && !request.model.startsWith(networkModelPrefix) ? inference.upstreams.route(request.model) : undefined;
    if (network === undefined && upstream === undefined) throw modelNotFound(request.model);
    refuseUnknownFields(request, network === undefined ? [] : networkFields);
    const turn = network === undefined ? undefined : networkTurnOf(request, network);

    const release = await inference.admission.admit(clientId);
    try {
      if (network !== undefined) {
        call.where = { network: network.name };
        const left = new AbortController();
        onClientGone(res, () => left.abort());
        const chat = { request, res, headers: call.headers, signal: left.signal, chats: options.chats, network, turn: turn!, metadata: { request_id: call.requestId } };
        call.usage = await completeWithNetwork({ ...chat, clock: inference.clock });
        if (!res.writableEnded && !left.signal.aborted) throw new AxonError(Code.Internal, "CHAT_ENDED_WITHOUT_ANSWER", "the network's chat ended without an answer");
      } else {
        call.where = { upstream: upstream!.name };
        const outcome = await completeWithUpstream({ request, res, headers: call.headers, native: options.native, upstreams: inference.upstreams, upstream: upstream!, clientId });
        call.usage = outcome.usage;
        if (outcome.failure !== undefined) call.where.failure = outcome.failure;
      }
    } finally {
      release();
    }
  }

  /** Once answered: the metrics, the day's tokens (the one write of a call, off its path) and the call's one log line. */
  function account(call: CallRecord, res: AnswerSink): void {
    const status = (res as unknown as { statusCode: number }).statusCode;
    const { promptTokens = 0, completionTokens = 0, totalTokens = 0 } = call.usage ?? {};
    const { clientId, model } = call;
    if (clientId !== undefined && model !== undefined && call.path === chatPath) {
      options.metrics.inferenceCall({ client: clientId, model, status, promptTokens, completionTokens });
      inference.tokens.add(clientId, totalTokens);
    }
    const line: Record<string, unknown> = { request_id: call.requestId, route: call.path, protocol: "openai", status, ms: Math.round(performance.now() - call.started) };
    if (clientId !== undefined) line.client = clientId;
    if (model !== undefined) Object.assign(line, { model, stream: call.stream }, call.where);
    if (call.usage !== undefined) Object.assign(line, { prompt_tokens: promptTokens, completion_tokens: completionTokens });
    if (call.code !== undefined) line.code = call.code;
    logger.info(line, "request");
  }

  async function route(req: HttpRequest, res: AnswerSink, call: CallRecord): Promise<void> {
    const { path } = call;
    const method = req.method ?? "GET";
    const modelId = path.startsWith(`${modelsPath}/`) ? decodedSegment(path.slice(modelsPath.length + 1)) : undefined;
    if (path !== chatPath && path !== modelsPath && modelId === undefined) throw notFound("UNKNOWN_URL", "there is no such route under /v1", { path });
    const allowed = path === chatPath ? "POST" : "GET";
    if (method !== allowed && !(allowed === "GET" && method === "HEAD")) throw methodNotAllowed(allowed);
    call.clientId = (await authenticator.client(credentialsOf(req))).name;
    if (path === chatPath) return complete(req, res, call.clientId, call);
    return listModels(res, call.clientId, call.headers, modelId);
  }

  return {
    async handle(req, res) {
      const path = (req.url ?? "/").split("?", 1)[0] ?? "/";
      if (!path.startsWith("/v1/")) return false;
      const asked = headerIn(req.headers, "x-request-id");
      // The client's own id is echoed and logged only when it is plain printable ASCII of a sane length.
      const requestId = asked !== undefined && /^[\x21-\x7e]{1,128}$/.test(asked) ? asked : randomUUID();
      const call: CallRecord = { path, requestId, started: performance.now(), headers: { "x-request-id": requestId } };
      const sink = sinkOf(res);
      try {
        await route(req, sink, call);
      } catch (error) {
        const shaped = openAiErrorOf(error);
        call.code = shaped.error.code ?? undefined;
        // Only the kind of an unexpected failure: its text may quote what it failed on.
        if (shaped.status >= 500 && !(error instanceof AxonError)) logger.error({ err: error, request_id: requestId }, "inference call failed");
        // An unread request body would otherwise be read to its end to keep the connection: close it instead.
        writeErrorAnswer(sink, shaped, leavesUnreadBody(req) ? { ...call.headers, connection: "close" } : call.headers);
      }
      account(call, sink);
      return true;
    },
  };
}

/** What one call's accounting and log line need, filled in as the call goes. */
interface CallRecord {
  path: string;
  requestId: string;
  started: number;
  headers: Record<string, string>;
  clientId?: string;
  model?: string;
  stream?: boolean;
  usage?: TokenUsage | undefined;
  where?: Record<string, string>;
  code?: string | undefined;
}

function modelNotFound(model: string): AxonError {
  return new AxonError(Code.NotFound, "MODEL_NOT_FOUND", `the model ${model} does not exist or you do not have access to it`, {
    fieldViolations: [{ field: "model", description: "a model /v1/models lists" }],
  });
}

function methodNotAllowed(allow: string): AxonError {
  return new AxonError(Code.InvalidArgument, "METHOD_NOT_ALLOWED", `this route takes ${allow}`, { metadata: { allow } });
}

function decodedSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
