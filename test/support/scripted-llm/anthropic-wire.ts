import type { JsonObject } from "@bufbuild/protobuf";
import type { LlmMessage, LlmToolCall } from "../../../src/llm/llm.js";
import { argumentsText, estimatedUsage, halves, pieces, type ScriptedRequest } from "./script.js";
import { bearer, isObject, startEvents, textOf, writeJson, type Wire } from "./wire.js";

/** Anthropic Messages (`POST /v1/messages`). */
export const anthropicWire: Wire = {
  matches: (pathname) => pathname.endsWith("/v1/messages"),
  // SDK 1.x sends the key as a bearer token; older clients and curl use x-api-key.
  credential: (headers) => bearer(headers) ?? (headers["x-api-key"] as string | undefined),

  parse(body) {
    const messages: LlmMessage[] = [];
    for (const turn of (Array.isArray(body["messages"]) ? body["messages"] : []).filter(isObject)) {
      const content = turn["content"];
      const blocks: unknown[] = typeof content === "string" ? [{ type: "text", text: content }] : Array.isArray(content) ? content : [];
      const contentBlocks = blocks.filter(isObject);
      if (turn["role"] === "assistant") {
        const toolCalls: LlmToolCall[] = contentBlocks
          .filter((block) => block["type"] === "tool_use")
          .map((block) => ({
            id: String(block["id"]),
            name: String(block["name"]),
            arguments: isObject(block["input"]) ? block["input"] : {},
          }));
        const text = textOf(contentBlocks.filter((block) => block["type"] === "text"));
        messages.push({ role: "assistant", content: text, ...(toolCalls.length > 0 ? { toolCalls } : {}) });
        continue;
      }
      // A user turn: tool results become tool messages, runs of text one user message, in block order.
      let text: string | undefined;
      const flushText = () => {
        if (text !== undefined) messages.push({ role: "user", content: text });
        text = undefined;
      };
      for (const block of contentBlocks) {
        if (block["type"] === "tool_result") {
          flushText();
          messages.push({ role: "tool", toolCallId: String(block["tool_use_id"]), content: textOf(block["content"]) });
        } else if (block["type"] === "text") {
          text = (text ?? "") + String(block["text"]);
        }
      }
      flushText();
    }
    const tools = (Array.isArray(body["tools"]) ? body["tools"] : []).filter(isObject).map((tool) => ({
      name: String(tool["name"]),
      description: String(tool["description"] ?? ""),
      parameters: isObject(tool["input_schema"]) ? tool["input_schema"] : {},
    }));
    const system = textOf(body["system"]);
    return {
      model: String(body["model"]),
      ...(system === "" ? {} : { system }),
      messages,
      tools,
      stream: body["stream"] === true,
    } satisfies ScriptedRequest;
  },

  write(response, reply, request, _body, serial) {
    const usage = estimatedUsage(request, reply);
    const toolCalls = (reply.toolCalls ?? []).map((call, index) => ({ id: `toolu_${serial}_${index}`, call }));
    const stopReason = toolCalls.length > 0 ? "tool_use" : "end_turn";
    const message = { id: `msg_${serial}`, type: "message", role: "assistant", model: reply.model ?? request.model };
    if (!request.stream) {
      const content: JsonObject[] = [
        ...(reply.text === undefined ? [] : [{ type: "text", text: reply.text }]),
        ...toolCalls.map(({ id, call }) => ({
          type: "tool_use",
          id,
          name: call.name,
          // The API always sends an object; a scripted malformed string is passed through as is.
          input: call.arguments,
        })),
      ];
      writeJson(response, 200, {
        ...message,
        content,
        stop_reason: stopReason,
        stop_sequence: null,
        usage: { input_tokens: usage.promptTokens, output_tokens: usage.completionTokens },
      });
      return;
    }
    startEvents(response);
    const send = (type: string, data: JsonObject) =>
      response.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
    send("message_start", {
      message: { ...message, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: usage.promptTokens, output_tokens: 1 } },
    });
    send("ping", {});
    let index = 0;
    if (reply.text !== undefined) {
      send("content_block_start", { index, content_block: { type: "text", text: "" } });
      for (const piece of pieces(reply.text)) send("content_block_delta", { index, delta: { type: "text_delta", text: piece } });
      send("content_block_stop", { index });
      index++;
    }
    for (const { id, call } of toolCalls) {
      send("content_block_start", { index, content_block: { type: "tool_use", id, name: call.name, input: {} } });
      for (const piece of halves(argumentsText(call))) {
        send("content_block_delta", { index, delta: { type: "input_json_delta", partial_json: piece } });
      }
      send("content_block_stop", { index });
      index++;
    }
    send("message_delta", { delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: usage.completionTokens } });
    send("message_stop", {});
    response.end();
  },

  errorBody(status, credential) {
    if (status === 401) {
      return { type: "error", error: { type: "authentication_error", message: `invalid x-api-key ${credential ?? ""}` } };
    }
    const type =
      status === 429 ? "rate_limit_error" : status === 529 ? "overloaded_error" : status >= 500 ? "api_error" : "invalid_request_error";
    return { type: "error", error: { type, message: `scripted failure ${status}` } };
  },
};
