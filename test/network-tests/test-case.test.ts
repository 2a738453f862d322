import { mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadTestCase, TestCaseError } from "../../src/network-tests/test-case.js";

const folder = mkdtempSync(path.join(tmpdir(), "axon-network-test-cases-"));
let fileCount = 0;

function caseFile(text: string): string {
  const file = path.join(folder, `case-${++fileCount}.hocon`);
  writeFileSync(file, text);
  return file;
}

async function loadError(text: string): Promise<TestCaseError> {
  const file = caseFile(text);
  const error = await loadTestCase(file).then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(TestCaseError);
  expect((error as TestCaseError).file).toBe(file);
  return error as TestCaseError;
}

describe("reading a test case file", () => {
  it("reads the agent, the interactions, their requests and one assertion per criterion", async () => {
    const testCase = await loadTestCase(
      caseFile(`
        # neuro-san's files are JSON with comments; HOCON's shorter forms work too.
        {
          "agent": "math_guy",
          "success_ratio": "2/3",
          "timeout_in_seconds": 300,
          "metadata": {"user_id": "tester", "attempt": 1},
          "connections": ["direct", "http"],
          "interactions": [
            {
              "text": "times",
              "sly_data": {"x": 847, "y": 23},
              "chat_filter": "maximal",
              "timeout_in_seconds": 2.5,
              "response": {
                "text": {"keywords": ["product", "19481"], "not_keywords": "error"},
                "sly_data": {"equals": {"value": [19481.0]}}
              }
            },
            {text: "again", continue_conversation: false, chat_filter {chat_filter_type: MINIMAL}}
          ]
        }`),
    );
    expect(testCase.agent).toBe("math_guy");
    expect(testCase.successRatio).toEqual({ required: 2, runs: 3 });
    expect(testCase.timeoutSeconds).toBe(300);
    expect(testCase.metadata).toEqual({ user_id: "tester", attempt: "1" });

    const [first, second] = testCase.interactions;
    expect(first).toMatchObject({
      text: "times",
      slyData: { x: 847, y: 23 },
      chatFilter: "MAXIMAL",
      continueConversation: true,
      timeoutSeconds: 2.5,
    });
    expect(first?.assertions.map(({ target, test, expected }) => [target, test, expected])).toEqual([
      ["text", "keywords", "product"],
      ["text", "keywords", "19481"],
      ["text", "not_keywords", "error"],
      ["sly_data.equals", "value", 19481],
    ]);
    expect(second).toMatchObject({ chatFilter: "MINIMAL", continueConversation: false, slyData: undefined, assertions: [] });
  });

  it("defaults to one run that must pass, MINIMAL, continuing the conversation, no metadata", async () => {
    const testCase = await loadTestCase(caseFile(`agent: hello_world, interactions: [{text: "hi"}]`));
    expect(testCase.successRatio).toEqual({ required: 1, runs: 1 });
    expect(testCase.timeoutSeconds).toBeUndefined();
    expect(testCase.metadata).toEqual({});
    expect(testCase.interactions[0]).toMatchObject({ chatFilter: "MINIMAL", continueConversation: true, timeoutSeconds: undefined });
  });

  it("reaches nested keys by nesting, by HOCON dotted keys and by quoted dotted keys alike", async () => {
    const testCase = await loadTestCase(
      caseFile(`
        agent: a
        interactions: [{
          text: "x"
          response {
            sly_data { totals { sum { greater: 1 } } }
            structure.answer.detail { keywords: "yes" }
            "structure.cost.total": { not_greater: 10 }
          }
        }]`),
    );
    expect(testCase.interactions[0]?.assertions.map(({ target, part, path }) => ({ target, part, path }))).toEqual([
      { target: "sly_data.totals.sum", part: "sly_data", path: ["totals", "sum"] },
      { target: "structure.answer.detail", part: "structure", path: ["answer", "detail"] },
      { target: "structure.cost.total", part: "structure", path: ["cost", "total"] },
    ]);
  });

  it("tests the whole sly_data when its block holds tests directly", async () => {
    const testCase = await loadTestCase(
      caseFile(`agent: a, interactions: [{text: "x", response { sly_data { keywords: "last_result" } }}]`),
    );
    expect(testCase.interactions[0]?.assertions[0]).toMatchObject({ target: "sly_data", path: [], test: "keywords" });
  });

  it("accepts every stock test and its not_ form", async () => {
    const testCase = await loadTestCase(
      caseFile(`
        agent: a
        interactions: [{
          text: "x"
          response.text {
            value: "a", not_value: "b", less: "z", not_less: "a", greater: "a", not_greater: "z",
            keywords: "a", not_keywords: "b", gist: "something", not_gist: "something else"
          }
        }]`),
    );
    expect(testCase.interactions[0]?.assertions.map((assertion) => assertion.test)).toEqual([
      "value", "not_value", "less", "not_less", "greater", "not_greater", "keywords", "not_keywords", "gist", "not_gist",
    ]);
  });

  it("parses every example case under test/networks", async () => {
    const examples = path.resolve("test/networks");
    const files = readdirSync(examples).filter((name) => name.endsWith(".hocon"));
    expect(files.length).toBeGreaterThanOrEqual(4);
    for (const name of files) {
      const testCase = await loadTestCase(path.join(examples, name));
      expect(testCase.agent).toBe(name.replace(/\.hocon$/, ""));
    }
  });
});

describe("an invalid test case file is refused, naming the file, the key and the reason", () => {
  it.each([
    ["a missing agent", `interactions: [{text: "x"}]`, "agent", /required/],
    ["an unknown top-level key", `agent: a, interaction: [{text: "x"}]`, "interaction", /unknown key/],
    ["no interactions", `agent: a, interactions: []`, "interactions", /non-empty list/],
    ["a success ratio that is no fraction", `agent: a, success_ratio: "most", interactions: [{text: "x"}]`, "success_ratio", /"k\/n"/],
    ["more required runs than runs", `agent: a, success_ratio: "3/2", interactions: [{text: "x"}]`, "success_ratio", /1 <= k <= n/],
    ["no required runs", `agent: a, success_ratio: "0/2", interactions: [{text: "x"}]`, "success_ratio", /1 <= k <= n/],
    ["an interaction without text", `agent: a, interactions: [{response {}}]`, "interactions[0].text", /required/],
    ["a misspelt interaction key", `agent: a, interactions: [{text: "x", respons {}}]`, "interactions[0].respons", /unknown key/],
    ["an unknown chat filter", `agent: a, interactions: [{text: "x", chat_filter: LOUD}]`, "interactions[0].chat_filter", /MINIMAL/],
    ["a zero timeout", `agent: a, interactions: [{text: "x", timeout_in_seconds: 0}]`, "interactions[0].timeout_in_seconds", /positive/],
    ["a non-boolean continue_conversation", `agent: a, interactions: [{text: "x", continue_conversation: "yes"}]`, "interactions[0].continue_conversation", /boolean/],
    ["an unknown response part", `agent: a, interactions: [{text: "x", response { answer { value: 1 } }}]`, "interactions[0].response.answer", /text, sly_data, structure/],
    ["a key below text", `agent: a, interactions: [{text: "x", response { "text.first": { value: 1 } }}]`, "interactions[0].response.text.first", /no keys/],
    ["a misspelt test on text", `agent: a, interactions: [{text: "x", response { text { keyword: "a" } }}]`, "interactions[0].response.text.keyword", /unknown test/],
    ["tests mixed with keys", `agent: a, interactions: [{text: "x", response { sly_data { value: 1, total { value: 2 } } }}]`, "interactions[0].response.sly_data", /mixes tests \(value\) with keys \(total\)/],
    ["a test block that is not an object", `agent: a, interactions: [{text: "x", response { sly_data { total: 3 } }}]`, "interactions[0].response.sly_data.total", /expected an object of tests/],
    ["an empty list of criteria", `agent: a, interactions: [{text: "x", response { text { keywords: [] } }}]`, "interactions[0].response.text.keywords", /empty list/],
    ["an object as a numeric bound", `agent: a, interactions: [{text: "x", response { text { less: {a: 1} } }}]`, "interactions[0].response.text.less", /number or a string/],
    ["an empty keyword in a list", `agent: a, interactions: [{text: "x", response { text { keywords: ["a", ""] } }}]`, "interactions[0].response.text.keywords[1]", /non-empty string/],
    ["an empty gist", `agent: a, interactions: [{text: "x", response { text { gist: " " } }}]`, "interactions[0].response.text.gist", /non-empty description/],
  ])("%s", async (_name, text, key, reason) => {
    const error = await loadError(text);
    expect(error.key).toBe(key);
    expect(error.reason).toMatch(reason);
    expect(error.message).toContain(`${error.file}: ${key}: `);
  });

  it("reports a HOCON syntax error with its line", async () => {
    const error = await loadError(`agent: a\ninteractions: [{text: "x"}\n`);
    expect(error.key).toMatch(/^line \d+/);
    expect(error.reason).not.toBe("");
  });

  it("reports a missing file", async () => {
    const missing = path.join(folder, "nowhere.hocon");
    await expect(loadTestCase(missing)).rejects.toThrow(`${missing}: file not found`);
  });
});
