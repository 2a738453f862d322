import { describe, expect, it } from "vitest";
import { usageWithCost } from "../../src/llm/prices.js";
import { objectSchema, parseToolArguments } from "../../src/llm/tools.js";
import { defaultReply, type ScriptedRequest } from "../support/scripted-llm/scripted-llm.js";

describe("usage and cost", () => {
  it("prices a known model by its longest matching prefix, dated names included", () => {
    expect(usageWithCost("gpt-4o-mini-2024-07-18", 1_000_000, 0).cost).toBeCloseTo(0.15);
    expect(usageWithCost("gpt-4o-2024-08-06", 1_000_000, 1_000_000).cost).toBeCloseTo(12.5);
    expect(usageWithCost("claude-sonnet-4-5-20250929", 2_000_000, 0).cost).toBeCloseTo(6);
  });

  it("costs 0 for a model not in the table, and totals the tokens", () => {
    expect(usageWithCost("llama3.1:8b", 10, 5)).toEqual({ promptTokens: 10, completionTokens: 5, totalTokens: 15, cost: 0 });
  });
});

describe("tool arguments", () => {
  it("parses a JSON object", () => {
    expect(parseToolArguments('{"a":1}')).toEqual({ arguments: { a: 1 } });
  });

  it("takes an empty string as no arguments", () => {
    expect(parseToolArguments("")).toEqual({ arguments: {} });
  });

  it.each(['{"a":', "[1,2]", "42"])("gives %s as {} with the reason", (raw) => {
    expect(parseToolArguments(raw)).toEqual({ arguments: {}, argumentsError: expect.any(String) as string });
  });

  it("turns an agent's empty parameters into an object schema", () => {
    expect(objectSchema({})).toEqual({ type: "object", properties: {} });
    const schema = { type: "object", properties: { x: { type: "string" } } };
    expect(objectSchema(schema)).toEqual(schema);
  });

  it("offers Python's type names as JSON Schema's, at every depth, leaving names and data alone", () => {
    const written = {
      type: "object",
      properties: {
        type: { type: "str", enum: ["int", "float"] },
        amounts: { type: "list", items: { type: "float" } },
        rows: { type: ["dict", "null"], additionalProperties: { anyOf: [{ type: "int" }, { type: "bool" }] } },
      },
    };
    expect(objectSchema(written)).toEqual({
      type: "object",
      properties: {
        type: { type: "string", enum: ["int", "float"] },
        amounts: { type: "array", items: { type: "number" } },
        rows: { type: ["object", "null"], additionalProperties: { anyOf: [{ type: "integer" }, { type: "boolean" }] } },
      },
    });
    expect(written.properties.amounts.items.type).toBe("float");
  });
});

describe("the scripted servers' default reply", () => {
  const request = (messages: ScriptedRequest["messages"], tools: ScriptedRequest["tools"] = []): ScriptedRequest => ({
    model: "m",
    messages,
    tools,
    stream: false,
  });
  const booking = {
    name: "book",
    description: "",
    parameters: {
      type: "object",
      properties: {
        city: { type: "string" },
        nights: { type: "integer" },
        budget: { type: "number" },
        breakfast: { type: "boolean" },
        room: { type: "string", enum: ["single", "double"] },
        guests: { type: "array", items: { type: "string" } },
        extras: { type: "object", properties: { note: { type: "string" } } },
      },
    },
  };

  it("calls the first tool with arguments made from its schema and the user's text", () => {
    const reply = defaultReply(request([{ role: "user", content: "Paris for 3.5 nights under 400" }], [booking]));
    const text = "Paris for 3.5 nights under 400";
    expect(reply).toEqual({
      toolCalls: [
        {
          name: "book",
          arguments: { city: text, nights: 3, budget: 400, breakfast: true, room: "single", guests: [text], extras: { note: text } },
        },
      ],
    });
  });

  it("answers with the last round's tool results", () => {
    const reply = defaultReply(
      request(
        [
          { role: "user", content: "go" },
          { role: "assistant", content: "", toolCalls: [] },
          { role: "tool", toolCallId: "1", content: "first" },
          { role: "tool", toolCallId: "2", content: "second" },
        ],
        [booking],
      ),
    );
    expect(reply).toEqual({ text: "Answer: first; second" });
  });

  it("without tools echoes the user", () => {
    expect(defaultReply(request([{ role: "user", content: "hello" }]))).toEqual({ text: "Answer: hello" });
  });
});
