import { toJson, type JsonValue } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { AxonError, Code } from "../../src/errors.js";
import { ChatRequestSchema } from "../../src/gen/neuro_san/api/grpc/agent_pb.js";
import { parseJsonText, parseLenientJson } from "../../src/server/rest/lenient-json.js";

const chatRequest = (json: JsonValue) => toJson(ChatRequestSchema, parseLenientJson(ChatRequestSchema, json));

function violationsOf(json: JsonValue): { field: string; description: string }[] {
  try {
    parseLenientJson(ChatRequestSchema, json);
  } catch (error) {
    expect(error).toBeInstanceOf(AxonError);
    const axonError = error as AxonError;
    expect(axonError.code).toBe(Code.InvalidArgument);
    expect(axonError.reason).toBe("INVALID_FIELD");
    return axonError.fieldViolations;
  }
  throw new Error("expected INVALID_FIELD");
}

describe("lenient request JSON", () => {
  it("unknown fields are ignored, at any depth", () => {
    expect(chatRequest({ user_message: { text: "hi", mood: "sunny" }, chat_context: null, extra: [1] })).toEqual({
      user_message: { text: "hi" },
    });
  });

  it.each([
    ["MAXIMAL", "MAXIMAL"],
    ["maximal", "MAXIMAL"],
    ["Minimal", "MINIMAL"],
    [2, "MAXIMAL"],
    ["2", "MAXIMAL"],
    [1, "MINIMAL"],
  ])("an enum accepts its name in any case or its number: %j", (given, expected) => {
    expect(chatRequest({ chat_filter: { chat_filter_type: given } })).toEqual({ chat_filter: { chat_filter_type: expected } });
  });

  it.each([["verbose"], [7], [-1], [true], [{}], [1.5]])("an enum value nobody knows means the default: %j", (given) => {
    expect(chatRequest({ chat_filter: { chat_filter_type: given } })).toEqual({ chat_filter: {} });
  });

  it("user_message.type may be a name or a number", () => {
    expect(chatRequest({ user_message: { type: "human", text: "a" } })).toEqual({ user_message: { type: "HUMAN", text: "a" } });
    expect(chatRequest({ user_message: { type: 2, text: "a" } })).toEqual({ user_message: { type: "HUMAN", text: "a" } });
  });

  it("sly_data takes any JSON object", () => {
    expect(chatRequest({ sly_data: { x: [1, { y: null }], z: "w" } })).toEqual({ sly_data: { x: [1, { y: null }], z: "w" } });
  });

  it("a value of the wrong type is an INVALID_ARGUMENT naming the field", () => {
    expect(violationsOf({ user_message: { text: 123 } })).toEqual([{ field: "user_message.text", description: "expected string, got 123" }]);
    expect(violationsOf({ sly_data: "x" })).toMatchObject([{ field: "sly_data" }]);
    expect(violationsOf({ user_message: "hi" })).toMatchObject([{ field: "user_message" }]);
  });

  it("violations inside lists carry their index, and all of them are reported", () => {
    expect(
      violationsOf({
        user_message: { mime_data: {}, origin: [{ tool: "a" }, { tool: "b", instantiation_index: 1.5 }] },
        chat_context: { chat_histories: [null] },
      }).map((violation) => violation.field),
    ).toEqual(["user_message.mime_data", "user_message.origin[1].instantiation_index", "chat_context.chat_histories[0]"]);
  });

  it("bytes must be base64", () => {
    expect(chatRequest({ user_message: { mime_data: [{ mime_type: "text/plain", mime_bytes: "aGk=" }] } })).toEqual({
      user_message: { mime_data: [{ mime_type: "text/plain", mime_bytes: "aGk=" }] },
    });
    expect(violationsOf({ user_message: { mime_data: [{ mime_bytes: 5 }] } })).toMatchObject([{ field: "user_message.mime_data[0].mime_bytes" }]);
  });

  describe("body text", () => {
    const bytes = (text: string) => new TextEncoder().encode(text);

    it("an empty or blank body is no body", () => {
      expect(parseJsonText(bytes(""))).toBeUndefined();
      expect(parseJsonText(bytes(" \n"))).toBeUndefined();
    });

    it("malformed JSON is an INVALID_ARGUMENT with reason MALFORMED_JSON", () => {
      for (const text of ["{", "{'a': 1}", "[1,]"]) {
        expect(() => parseJsonText(bytes(text))).toThrow(
          expect.objectContaining({ code: Code.InvalidArgument, reason: "MALFORMED_JSON" }) as Error,
        );
      }
      expect(() => parseJsonText(new Uint8Array([0x7b, 0xff, 0x7d]))).toThrow(expect.objectContaining({ reason: "MALFORMED_JSON" }) as Error);
    });
  });
});
