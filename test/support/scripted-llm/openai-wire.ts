import type { JsonObject } from "@bufbuild/protobuf";
import type { LlmMessage } from "../../../src/llm/llm.js";
import { parseToolArguments } from "../../../src/llm/tools.js";
import { argumentsText, estimatedUsage, halves, pieces, type ScriptedRequest } from "./script.js";
import { bearer, isObject, startEvents, textOf, writeJson, type Wire } from "./wire.js";

/** OpenAI chat completions, also as Azure serves them (`/openai/deployments/<name>/chat/completions`). */
export const openAiWire: Wire = {
  matches: (pathname) => pathname.endsWith("/chat/completions"),
  credential: (headers) => bearer(headers) ?? (headers["api-key"] as string | undefined),

  parse(body) {
    const raw = Array.isArray(body["messages"]) ? body["messages"] : [];
    const system: string[] = [];
    const messages: LlmMessage[] = [];
    for (const message of raw.filter(isObject)) {
      const content = textOf(message["content"]);
      switch (message["role"]) {
        case "system":
        case "developer":
          system.push(content);
          break;
        case "user":
          messages.push({ role: "user", content });
          break;
        case "tool":
          messages.push({ role: "tool", toolCallId: String(message["tool_call_id"]), content });
          break;
        case "assistant": {
          const calls = Array.isArray(message["tool_calls"]) ? message["tool_calls"].filter(isObject) : [];
          const toolCalls = calls.map((call) => {
            const fn = isObject(call["function"]) ? call["function"] : {};
            return { id: String(call["id"]), name: String(fn["name"]), ...parseToolArguments(String(fn["arguments"] ?? "")) };
          });
          messages.push({ role: "assistant", content, ...(toolCalls.length > 0 ? { toolCalls } : {}) });
          break;
        }
      }
    }
    const tools = (Array.isArray(body["tools"]) ? body["tools"] : []).filter(isObject).map((tool) => {
      const fn = isObject(tool["function"]) ? tool["function"] : {};
      return {
        name: String(fn["name"]),
        description: String(fn["description"] ?? ""),
        parameters: isObject(fn["parameters"]) ? fn["parameters"] : {},
      };
    });
    return {
      model: String(body["model"]),
      ...(system.length > 0 ? { system: system.join("\n\n") } : {}),
      messages,
      tools,
      stream: body["stream"] === true,
    } satisfies ScriptedRequest;
  },

  write(response, reply, request, body, serial) {
    const usage = estimatedUsage(request, reply);
    const usageBody = {
      prompt_tokens: usage.promptTokens,
      completion_tokens: usage.completionTokens,
      total_tokens: usage.promptTokens + usage.completionTokens,
    };
    const toolCalls = (reply.toolCalls ?? []).map((call, index) => ({
      id: `call_${serial}_${index}`,
      type: "function",
      function: { name: call.name, arguments: argumentsText(call) },
    }));
    const finishReason = toolCalls.length > 0 ? "tool_calls" : "stop";
    const base = { id: `chatcmpl-${serial}`, created: Math.floor(Date.now() / 1000), model: reply.model ?? request.model };
    if (!request.stream) {
      writeJson(response, 200, {
        ...base,
        object: "chat.completion",
        choices: [
          {
            index: 0,
            message: {
              role: "assistant",
              content: reply.text ?? null,
              refusal: null,
              ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
            },
            logprobs: null,
            finish_reason: finishReason,
          },
        ],
        usage: usageBody,
      });
      return;
    }
    startEvents(response);
    const send = (choices: JsonObject[], extra: JsonObject = {}) =>
      response.write(`data: ${JSON.stringify({ ...base, object: "chat.completion.chunk", choices, ...extra })}\n\n`);
    const delta = (value: JsonObject, finish: string | null = null) =>
      send([{ index: 0, delta: value, logprobs: null, finish_reason: finish }]);
    delta({ role: "assistant", content: "" });
    for (const piece of pieces(reply.text ?? "")) delta({ content: piece });
    toolCalls.forEach((call, index) => {
      delta({ tool_calls: [{ index, id: call.id, type: "function", function: { name: call.function.name, arguments: "" } }] });
      for (const piece of halves(call.function.arguments)) delta({ tool_calls: [{ index, function: { arguments: piece } }] });
    });
    delta({}, finishReason);
    const streamOptions = body["stream_options"];
    if (isObject(streamOptions) && streamOptions["include_usage"] === true) send([], { usage: usageBody });
    response.end("data: [DONE]\n\n");
  },

  errorBody(status, credential) {
    if (status === 401) {
      const message = `Incorrect API key provided: ${credential ?? ""}`;
      return { error: { message, type: "invalid_request_error", param: null, code: "invalid_api_key" } };
    }
    const type = status === 429 ? "rate_limit_exceeded" : status >= 500 ? "server_error" : "invalid_request_error";
    return { error: { message: `scripted failure ${status}`, type, param: null, code: type } };
  },
};
