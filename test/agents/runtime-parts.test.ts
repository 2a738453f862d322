import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { AsyncQueue } from "../../src/agents/async-queue.js";
import { nextChatContext, previousTurns, redactedSystemText } from "../../src/agents/chat-context.js";
import { argumentsAsSentences, toolNames } from "../../src/agents/llm-agent.js";
import { filterSlyData } from "../../src/agents/sly-data.js";
import { extractStructure } from "../../src/agents/structure.js";
import { ChatMessage_ChatMessageType as MessageType, OriginSchema } from "../../src/gen/neuro_san/api/grpc/chat_pb.js";

describe("sly_data policies", () => {
  const slyData = { user: "ada", token: "secret", nested: { a: 1 } };

  it("denies everything when no policy is given", () => {
    expect(filterSlyData(slyData, undefined)).toEqual({});
    expect(filterSlyData(slyData, false)).toEqual({});
  });

  it("true lets a copy of everything through", () => {
    const copy = filterSlyData(slyData, true);
    expect(copy).toEqual(slyData);
    (copy.nested as { a: number }).a = 2;
    expect(slyData.nested.a).toBe(1);
  });

  it("a list lets only those keys through", () => {
    expect(filterSlyData(slyData, ["user", "missing"])).toEqual({ user: "ada" });
  });

  it("a map keeps, drops and renames, and drops what it does not name", () => {
    expect(filterSlyData(slyData, { user: "username", token: false, nested: true })).toEqual({ username: "ada", nested: { a: 1 } });
  });
});

describe("structure_formats json", () => {
  it("takes a fenced json block into structure and keeps the rest as text", () => {
    expect(extractStructure('Here it is:\n```json\n{"total": 3}\n```')).toEqual({ text: "Here it is:", structure: { total: 3 } });
  });

  it("takes the outermost object when there is no fence", () => {
    expect(extractStructure('{"a": {"b": 1}} and more')).toEqual({ text: "and more", structure: { a: { b: 1 } } });
  });

  it("leaves text without valid JSON alone", () => {
    expect(extractStructure("no json {here")).toEqual({ text: "no json {here" });
    expect(extractStructure("[1, 2]")).toEqual({ text: "[1, 2]" });
  });
});

describe("chat_context", () => {
  const origin = [create(OriginSchema, { tool: "Front", instantiationIndex: 1 })];
  const turns = [
    { type: MessageType.HUMAN, text: "one" },
    { type: MessageType.AI, text: "1" },
    { type: MessageType.HUMAN, text: "two" },
    { type: MessageType.AI, text: "2" },
  ];

  it("redacts the system message and carries the front man's turns", () => {
    const context = nextChatContext(origin, turns);
    const messages = context.chatHistories[0]!.messages;
    expect(messages[0]).toMatchObject({ type: MessageType.SYSTEM, text: redactedSystemText });
    expect(messages.slice(1).map((m) => m.text)).toEqual(["one", "1", "two", "2"]);
  });

  it("keeps the system message plus the last max_message_history messages", () => {
    const context = nextChatContext(origin, turns, 2);
    expect(context.chatHistories[0]!.messages.map((m) => m.text)).toEqual([redactedSystemText, "two", "2"]);
  });

  it("reads back only HUMAN and AI turns of the front man's history", () => {
    const context = nextChatContext(origin, turns);
    expect(previousTurns(context, "Front").map((m) => m.text)).toEqual(["one", "1", "two", "2"]);
    expect(previousTurns(context, "Front", 1).map((m) => m.text)).toEqual(["2"]);
    expect(previousTurns(undefined, "Front")).toEqual([]);
  });
});

describe("tool naming and sub-agent input", () => {
  it("offers external references under valid, unique LLM tool names", () => {
    expect([...toolNames(["Helper", "/hello_world", "http://host:1/hello_world", "http://h/a b"]).values()]).toEqual([
      "Helper",
      "hello_world",
      "hello_world_2",
      "a_b",
    ]);
  });

  it("turns arguments into sentences", () => {
    expect(argumentsAsSentences({ language: "Welsh", count: 2 })).toBe("The language is Welsh. The count is 2.");
  });
});

describe("the message queue", () => {
  it("delivers pushed items in order, then ends or fails", async () => {
    const queue = new AsyncQueue<number>();
    queue.push(1);
    setTimeout(() => {
      queue.push(2);
      queue.fail(new Error("boom"));
    }, 5);
    const seen: number[] = [];
    await expect(
      (async () => {
        for await (const item of queue) seen.push(item);
      })(),
    ).rejects.toThrow("boom");
    expect(seen).toEqual([1, 2]);
  });
});
