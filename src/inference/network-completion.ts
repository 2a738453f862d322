import { randomUUID } from "node:crypto";
import { toJson, type JsonObject } from "@bufbuild/protobuf";
import type { ChatRunner } from "../agents/chat-runner.js";
import type { AgentNetwork } from "../agents/agent-network.js";
import { ChatContextSchema, ChatMessage_ChatMessageType as MessageType, type ChatMessage } from "../gen/neuro_san/api/grpc/chat_pb.js";
import type { Clock } from "../operations/clock.js";
import { doneEvent, eventOf, eventStreamHeaders, writeJsonAnswer, writeWithBackpressure, type AnswerSink } from "./answers.js";
import type { ChatRequest } from "./chat-request.js";
import type { NetworkTurn } from "./network-turn.js";
import type { TokenUsage } from "./token-usage.js";

/** An SSE comment: clients skip it, proxies see the stream is alive while the network works. */
const keepAlive = ": keep-alive\n\n";

export interface NetworkCompletionOptions {
  chats: ChatRunner;
  network: AgentNetwork;
  request: ChatRequest;
  turn: NetworkTurn;
  res: AnswerSink;
  headers: Record<string, string>;
  signal: AbortSignal;
  metadata: Record<string, string>;
  clock: Clock;
}

/**
 * A chat completion answered by an agent network: one StreamingChat turn through the same chat runner StreamingChat and
 * MCP use. The front man's answer is the assistant's content (streamed: a content delta), the chat's own token
 * accounting its usage, and the answer's `sly_data` and `chat_context` ride as extra top-level fields (the last chunk
 * of a stream carries them). `start` refusing (no key, too many chats) throws before anything is written.
 */
export async function completeWithNetwork(options: NetworkCompletionOptions): Promise<TokenUsage | undefined> {
  const { chats, network, request, turn, res, headers, signal, metadata, clock } = options;
  const messages = await chats.start({ network, text: turn.text, mimeData: [], slyData: turn.slyData, chatContext: turn.chatContext, metadata, signal });
  const base = { id: `chatcmpl-${randomUUID()}`, created: Math.floor(clock.now().getTime() / 1000), model: request.model };
  let usage: TokenUsage | undefined;

  if (!request.stream) {
    for await (const message of messages) {
      usage = usageOf(message) ?? usage;
      if (message.type !== MessageType.AGENT_FRAMEWORK) continue;
      writeJsonAnswer(
        res,
        200,
        {
          ...base,
          object: "chat.completion",
          choices: [{ index: 0, message: { role: "assistant", content: message.text, refusal: null }, logprobs: null, finish_reason: "stop" }],
          usage: usageJson(usage),
          ...extensionsOf(message),
        },
        headers,
      );
    }
    return usage;
  }

  res.writeHead(200, eventStreamHeaders(headers));
  const chunk = (choices: JsonObject[], extra: JsonObject = {}) => eventOf({ ...base, object: "chat.completion.chunk", choices, ...extra });
  const delta = (value: JsonObject) => chunk([{ index: 0, delta: value, logprobs: null, finish_reason: null }]);
  await writeWithBackpressure(res, delta({ role: "assistant", content: "" }));
  for await (const message of messages) {
    if (signal.aborted) break;
    usage = usageOf(message) ?? usage;
    if (message.type === MessageType.AGENT_PROGRESS) {
      await writeWithBackpressure(res, keepAlive);
      continue;
    }
    if (message.type !== MessageType.AGENT_FRAMEWORK) continue;
    const extensions = extensionsOf(message);
    await writeWithBackpressure(res, delta({ content: message.text }));
    // The extensions go on the last chunk before [DONE]: the usage chunk when the client asked for one.
    const finish = { index: 0, delta: {}, logprobs: null, finish_reason: "stop" };
    if (request.includeUsage) {
      await writeWithBackpressure(res, chunk([finish]));
      await writeWithBackpressure(res, chunk([], { usage: usageJson(usage), ...extensions }));
    } else {
      await writeWithBackpressure(res, chunk([finish], extensions));
    }
    res.end(doneEvent);
  }
  return usage;
}

/** The chat's own token accounting: the front man's AGENT message whose structure counts the whole request. */
function usageOf(message: ChatMessage): TokenUsage | undefined {
  const structure = message.structure;
  if (message.type !== MessageType.AGENT || message.origin.length !== 1 || structure === undefined || typeof structure.total_tokens !== "number") return undefined;
  const count = (value: unknown) => (typeof value === "number" && value > 0 ? Math.floor(value) : 0);
  return { promptTokens: count(structure.prompt_tokens), completionTokens: count(structure.completion_tokens), totalTokens: count(structure.total_tokens) };
}

function usageJson(usage: TokenUsage | undefined): JsonObject {
  const { promptTokens = 0, completionTokens = 0, totalTokens = 0 } = usage ?? {};
  return { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: totalTokens };
}

/** What the client carries back: the answer's sly_data (as the network's to_upstream lets it out) and the chat_context. */
function extensionsOf(message: ChatMessage): JsonObject {
  return {
    ...(message.slyData === undefined ? {} : { sly_data: message.slyData }),
    chat_context: message.chatContext === undefined ? {} : (toJson(ChatContextSchema, message.chatContext) as JsonObject),
  };
}
