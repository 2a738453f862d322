import { describe, expect, it } from "vitest";
import { chatCompletionFields, readChatRequest, refuseUnknownFields } from "../../src/inference/chat-request.js";
import { openAiErrorOf } from "../../src/inference/openai-errors.js";

const body = (json: unknown) => Buffer.from(JSON.stringify(json));
const hi = [{ role: "user", content: "hi" }];

/** The OpenAI error the route would answer with for what `work` throws. */
function refusal(work: () => unknown) {
  try {
    work();
  } catch (error) {
    return openAiErrorOf(error);
  }
  throw new Error("expected a refusal");
}

describe("reading a chat completion request", () => {
  it("reads the model, the messages, streaming, usage and the token bound; keeps the body as it came", () => {
    const raw = body({ model: "m", messages: hi, stream: true, stream_options: { include_usage: true }, max_tokens: 10, max_completion_tokens: 20 });
    const request = readChatRequest(raw);
    expect(request).toMatchObject({ model: "m", stream: true, includeUsage: true, maxTokens: 20 });
    expect(request.raw).toBe(raw);
    expect(readChatRequest(body({ model: "m", messages: hi, max_tokens: 10 })).maxTokens).toBe(10);
    expect(readChatRequest(body({ model: "m", messages: hi, stream: null })).stream).toBe(false);
  });

  it.each([
    ["not JSON", Buffer.from("{"), "invalid_json", null],
    ["not an object", body([1]), "invalid_request_body", null],
    ["no model", body({ messages: hi }), "invalid_parameter", "model"],
    ["no messages", body({ model: "m", messages: [] }), "invalid_parameter", "messages"],
    ["a message without a known role", body({ model: "m", messages: [...hi, { role: "robot" }] }), "invalid_parameter", "messages[1].role"],
    ["stream that is no boolean", body({ model: "m", messages: hi, stream: "yes" }), "invalid_parameter", "stream"],
    ["a token bound below 1", body({ model: "m", messages: hi, max_tokens: 0 }), "invalid_parameter", "max_tokens"],
  ])("refuses %s with 400, naming the field", (_, raw, code, param) => {
    expect(refusal(() => readChatRequest(raw))).toMatchObject({ status: 400, error: { type: "invalid_request_error", code, param } });
  });

  it("takes every field OpenAI documents and refuses any other, naming it", () => {
    const every = Object.fromEntries([...chatCompletionFields].map((field) => [field, null]));
    expect(() => refuseUnknownFields(readChatRequest(body({ ...every, model: "m", messages: hi })))).not.toThrow();
    const unknown = refusal(() => refuseUnknownFields(readChatRequest(body({ model: "m", messages: hi, extra_headers: {} }))));
    expect(unknown).toMatchObject({ status: 400, error: { code: "unknown_parameter", param: "extra_headers" } });
  });

  it("takes Axon's own fields only where they are allowed", () => {
    const request = readChatRequest(body({ model: "axon/echo", messages: hi, sly_data: {}, chat_context: {} }));
    expect(() => refuseUnknownFields(request, ["sly_data", "chat_context"])).not.toThrow();
    expect(refusal(() => refuseUnknownFields(request))).toMatchObject({ error: { param: "sly_data" } });
  });
});
