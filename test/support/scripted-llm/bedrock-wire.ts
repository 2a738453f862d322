import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { EventStreamCodec } from "@smithy/core/event-streams";
import type { LlmMessage, LlmToolCall } from "../../../src/llm/llm.js";
import { argumentsText, estimatedUsage, halves, pieces, type ScriptedRequest } from "./script.js";
import { isObject, textOf, writeJson, type Wire } from "./wire.js";

/** The SDK's own codec: the stand-in writes ConverseStream's events exactly as Bedrock frames them. */
const codec = new EventStreamCodec(
  (bytes) => Buffer.from(bytes).toString("utf8"),
  (text) => Buffer.from(text, "utf8"),
);

/** Converse's toolUse input is a JSON document: malformed arguments come back as a string document. */
function documentOf(text: string): JsonValue {
  try {
    return JSON.parse(text || "{}") as JsonValue;
  } catch {
    return text;
  }
}

const ERROR_TYPES: Record<number, string> = {
  400: "ValidationException",
  403: "AccessDeniedException",
  404: "ResourceNotFoundException",
  429: "ThrottlingException",
  500: "InternalServerException",
  503: "ServiceUnavailableException",
};

/** Bedrock Runtime's Converse (`POST /model/<id>/converse`) and ConverseStream (`.../converse-stream`). */
export const bedrockWire: Wire = {
  matches: (pathname) => /^\/model\/[^/]+\/converse(-stream)?$/.test(pathname),
  // SigV4: `Credential=<access key id>/<date>/<region>/bedrock/aws4_request`; the secret never travels.
  credential: (headers) => /Credential=([^/,\s]+)\//.exec(String(headers.authorization ?? ""))?.[1],

  parse(body, pathname) {
    const messages: LlmMessage[] = [];
    for (const turn of (Array.isArray(body["messages"]) ? body["messages"] : []).filter(isObject)) {
      const blocks = (Array.isArray(turn["content"]) ? turn["content"] : []).filter(isObject);
      if (turn["role"] === "assistant") {
        const toolCalls: LlmToolCall[] = blocks.flatMap((block) => {
          const use = block["toolUse"];
          return isObject(use) ? [{ id: String(use["toolUseId"]), name: String(use["name"]), arguments: isObject(use["input"]) ? use["input"] : {} }] : [];
        });
        messages.push({ role: "assistant", content: textOf(blocks), ...(toolCalls.length > 0 ? { toolCalls } : {}) });
        continue;
      }
      for (const block of blocks) {
        const result = block["toolResult"];
        if (isObject(result)) messages.push({ role: "tool", toolCallId: String(result["toolUseId"]), content: textOf(result["content"]) });
        else if (typeof block["text"] === "string") messages.push({ role: "user", content: block["text"] });
      }
    }
    const toolConfig = isObject(body["toolConfig"]) ? body["toolConfig"] : {};
    const tools = (Array.isArray(toolConfig["tools"]) ? toolConfig["tools"] : []).filter(isObject).map((tool) => {
      const spec = isObject(tool["toolSpec"]) ? tool["toolSpec"] : {};
      const schema = isObject(spec["inputSchema"]) && isObject(spec["inputSchema"]["json"]) ? spec["inputSchema"]["json"] : {};
      return { name: String(spec["name"]), description: String(spec["description"] ?? ""), parameters: schema };
    });
    const system = textOf(body["system"]);
    const [, model = "", stream] = /^\/model\/([^/]+)\/converse(-stream)?$/.exec(pathname) ?? [];
    return {
      model: decodeURIComponent(model),
      ...(system === "" ? {} : { system }),
      messages,
      tools,
      stream: stream !== undefined,
    } satisfies ScriptedRequest;
  },

  write(response, reply, request, _body, serial) {
    const usage = estimatedUsage(request, reply);
    const usageBody = { inputTokens: usage.promptTokens, outputTokens: usage.completionTokens, totalTokens: usage.promptTokens + usage.completionTokens };
    const toolUses = (reply.toolCalls ?? []).map((call, index) => ({ toolUseId: `tooluse_${serial}_${index}`, name: call.name, input: argumentsText(call) }));
    const stopReason = toolUses.length > 0 ? "tool_use" : "end_turn";
    if (!request.stream) {
      const content: JsonObject[] = [
        ...(reply.text ? [{ text: reply.text }] : []),
        ...toolUses.map((use) => ({ toolUse: { toolUseId: use.toolUseId, name: use.name, input: documentOf(use.input) } })),
      ];
      writeJson(response, 200, { output: { message: { role: "assistant", content } }, stopReason, usage: usageBody, metrics: { latencyMs: 1 } });
      return;
    }
    response.writeHead(200, { "content-type": "application/vnd.amazon.eventstream" });
    const send = (eventType: string, payload: JsonObject) =>
      response.write(
        codec.encode({
          headers: {
            ":message-type": { type: "string", value: "event" },
            ":event-type": { type: "string", value: eventType },
            ":content-type": { type: "string", value: "application/json" },
          },
          body: Buffer.from(JSON.stringify(payload)),
        }),
      );
    send("messageStart", { role: "assistant" });
    let index = 0;
    if (reply.text) {
      for (const piece of pieces(reply.text)) send("contentBlockDelta", { contentBlockIndex: index, delta: { text: piece } });
      send("contentBlockStop", { contentBlockIndex: index++ });
    }
    for (const use of toolUses) {
      send("contentBlockStart", { contentBlockIndex: index, start: { toolUse: { toolUseId: use.toolUseId, name: use.name } } });
      for (const piece of halves(use.input)) send("contentBlockDelta", { contentBlockIndex: index, delta: { toolUse: { input: piece } } });
      send("contentBlockStop", { contentBlockIndex: index++ });
    }
    send("messageStop", { stopReason });
    send("metadata", { usage: usageBody, metrics: { latencyMs: 1 } });
    response.end();
  },

  errorBody(status) {
    return { message: `scripted failure ${status}` };
  },

  errorHeaders(status) {
    return { "x-amzn-errortype": ERROR_TYPES[status] ?? "InternalServerException" };
  },
};
